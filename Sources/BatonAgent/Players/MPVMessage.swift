import BatonCore

/// What mpv's JSON IPC says, one line at a time (mpv's `--input-ipc-server`; see
/// ../shared/reference/players.md): the answer to a command by its `request_id`, or an event.
/// Plain values, no I/O: ``MPVConnection`` carries them.
enum MPVMessage: Equatable {
    /// The answer to command `id`: its `data` (null when there is none), or mpv's `error` text.
    case reply(id: Int64, Result<JSON, MPVError>)
    /// An event (`start-file`, `file-loaded`, `playback-restart`, `end-file`, ...).
    case event(MPVEvent)
    /// A line of neither kind (mpv's answers to commands sent without an id): nothing to do.
    case other

    /// The message one line of mpv's holds (without its newline).
    ///
    /// - Throws: ``MPVError/garbage(_:)`` for a line that is not a JSON object.
    init(line: some Collection<UInt8>) throws(MPVError) {
        let json: JSON
        do {
            json = try JSON.parse(line)
        } catch {
            throw .garbage("not JSON (\(error)): \(String(decoding: line.prefix(80), as: UTF8.self))")
        }
        guard case .object = json else { throw .garbage("not a JSON object: \(String(decoding: line.prefix(80), as: UTF8.self))") }
        if let name = json["event"]?.stringValue {
            self = .event(MPVEvent(name: name, fields: json))
        } else if let id = json["request_id"]?.intValue, let error = json["error"]?.stringValue {
            self = .reply(id: id, error == "success" ? .success(json["data"] ?? .null) : .failure(.failed(error)))
        } else {
            self = .other
        }
    }

    /// The line that sends command `arguments` (an array, or an object for the named form)
    /// under `id`, newline included.
    static func command(_ arguments: JSON, id: Int64) -> String {
        JSON.object([JSON.Member("command", arguments), JSON.Member("request_id", .int(id))]).serialized() + "\n"
    }
}

/// One of mpv's events: its name and every field it came with.
public struct MPVEvent: Sendable, Equatable {
    /// `start-file`, `file-loaded`, `playback-restart`, `end-file`, `seek`, ...
    public let name: String
    /// The whole event object.
    public let fields: JSON

    /// The playlist entry the event is about, when it says (`start-file`, `end-file`): mpv
    /// sends events of the previous entry too, so a caller matches by this.
    public var playlistEntryID: Int64? { fields["playlist_entry_id"]?.intValue }
    /// Why a file ended (`eof`, `stop`, `quit`, `error`, `redirect`), for `end-file`.
    public var reason: String? { fields["reason"]?.stringValue }
    /// What went wrong, for an `end-file` with reason `error` (`loading failed`, ...).
    public var fileError: String? { fields["file_error"]?.stringValue }
}

/// Why a call to mpv has no answer.
public enum MPVError: Error, Sendable, Equatable, CustomStringConvertible {
    /// mpv answered with an error (`property unavailable`, `invalid parameter`, ...).
    case failed(String)
    /// No answer by the call's deadline.
    case timedOut(String)
    /// The connection is gone (mpv quit or died), or could not be made.
    case closed(String)
    /// mpv, or whatever listens on the socket, sent something that is not its protocol.
    case garbage(String)

    public var description: String {
        switch self {
        case .failed(let text): "mpv: \(text)"
        case .timedOut(let text), .closed(let text), .garbage(let text): text
        }
    }
}
