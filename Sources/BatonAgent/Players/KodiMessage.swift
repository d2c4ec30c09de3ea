import BatonCore

/// What Kodi's JSON-RPC 2.0 sends (see ../shared/reference/renderers.md): the answer to a call
/// by its `id`, or a notification. Plain values, no I/O: ``KodiConnection`` carries them.
enum KodiMessage: Equatable {
    /// The answer to call `id`: its `result`, or Kodi's `error`.
    case reply(id: Int64, Result<JSON, KodiError>)
    /// A notification (`Player.OnPlay`, `Player.OnSeek`, ...).
    case notification(KodiNotification)

    /// The message one object of Kodi's holds.
    ///
    /// - Throws: ``KodiError/garbage(_:)`` for bytes that are not a JSON-RPC 2.0 object.
    init(object bytes: some Collection<UInt8>) throws(KodiError) {
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch {
            throw .garbage("Kodi sent something that is not JSON (\(error)): \(String(decoding: bytes.prefix(80), as: UTF8.self))")
        }
        if let method = json["method"]?.stringValue, json["id"] == nil {
            self = .notification(KodiNotification(method: method, data: json["params"]?["data"] ?? .null))
        } else if let id = json["id"]?.intValue, let result = json["result"] {
            self = .reply(id: id, .success(result))
        } else if let id = json["id"]?.intValue, let error = json["error"] {
            self = .reply(id: id, .failure(.failed(
                code: Int(error["code"]?.intValue ?? 0), message: error["message"]?.stringValue ?? "\(error.serialized())")))
        } else {
            throw .garbage("Kodi sent an object that is neither an answer nor a notification: \(String(decoding: bytes.prefix(80), as: UTF8.self))")
        }
    }

    /// The bytes of call `method` with `params` under `id`.
    static func call(_ method: String, _ params: JSON?, id: Int64) -> String {
        var members = [JSON.Member("jsonrpc", .string("2.0")), JSON.Member("method", .string(method)), JSON.Member("id", .int(id))]
        if let params { members.append(JSON.Member("params", params)) }
        return JSON.object(members).serialized()
    }
}

/// One of Kodi's notifications: its method and the `data` of its params.
public struct KodiNotification: Sendable, Equatable {
    /// `Player.OnPlay`, `Player.OnAVStart`, `Player.OnPause`, `Player.OnResume`,
    /// `Player.OnStop`, `Player.OnSeek`, `Application.OnVolumeChanged`, ...
    public let method: String
    /// What it says: for the player's, `item` and `player` (`playerid`, `speed`, for a seek
    /// `time`); `end` for `Player.OnStop`.
    public let data: JSON

    /// The notification `method` saying `data`.
    public init(method: String, data: JSON) {
        self.method = method
        self.data = data
    }
}

/// Why a call to Kodi has no answer.
public enum KodiError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Kodi answered with an error: `-32602 Invalid params.`, `-32100 Failed to execute method.`
    case failed(code: Int, message: String)
    /// No answer by the call's deadline.
    case timedOut(String)
    /// The connection is gone, or could not be made.
    case closed(String)
    /// Something that is not Kodi's JSON-RPC.
    case garbage(String)

    public var description: String {
        switch self {
        case .failed(let code, let message): "Kodi refused (\(code)): \(message)"
        case .timedOut(let text), .closed(let text), .garbage(let text): text
        }
    }
}

/// Kodi's times: `{hours, minutes, seconds, milliseconds}` both ways.
enum KodiTime {
    /// `seconds` (not below 0) as Kodi takes a time, to the millisecond.
    static func json(_ seconds: Double) -> JSON {
        let total = Int64((max(0, seconds) * 1000).rounded())
        return .object([
            JSON.Member("hours", .int(total / 3_600_000)), JSON.Member("minutes", .int(total / 60_000 % 60)),
            JSON.Member("seconds", .int(total / 1000 % 60)), JSON.Member("milliseconds", .int(total % 1000)),
        ])
    }

    /// The seconds of a time Kodi sent; nil when it is not one.
    static func seconds(_ time: JSON?) -> Double? {
        guard let time, let hours = time["hours"]?.doubleValue, let minutes = time["minutes"]?.doubleValue,
              let seconds = time["seconds"]?.doubleValue, let milliseconds = time["milliseconds"]?.doubleValue
        else { return nil }
        return hours * 3600 + minutes * 60 + seconds + milliseconds / 1000
    }
}
