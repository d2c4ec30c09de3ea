/// A request of `baton.playback`, the service every player app answers: a message whose
/// `command` names what to do. `play` is answered with a ``PlaybackProof``, every other
/// command with the player's ``PlaybackState`` after it; a failure with `error` and `detail`
/// (see ``PlaybackFailure``).
public enum PlaybackCommand: Sendable, Equatable {
    /// `{command = "state"}`.
    case state
    /// `{command = "play", uri = U | queue = {...}, index = I, position = S, paused = B,
    /// volume = V, muted = B}`.
    case play(PlayRequest)
    /// `{command = "pause"}`, `{command = "resume"}`, `{command = "stop"}`.
    case pause, resume, stop
    /// `{command = "seek", position = S}`.
    case seek(Double)
    /// `{command = "seek", by = D}`: from wherever it is when the player gets the request
    /// (negative goes back), so the request's own delay does not count.
    case seekBy(Double)
    /// `{command = "volume", level = L}` (0–100).
    case volume(Double)
    /// `{command = "mute", muted = B}`.
    case mute(Bool)
    /// `{command = "watch"}`: from now on, until `unwatch` or the channel closes, the agent
    /// sends the channel each ``PlayerChange`` as a request of its own; answered with the state.
    case watch
    /// `{command = "unwatch"}`: no more changes on this channel; answered with the state.
    case unwatch
    /// `{command = "share", uri = PATH, client = IP, host = HOST, ttl = S}`: serves the file
    /// the player has loaded (`uri`, a path on this device) over HTTP to the device at `client`
    /// alone, for `ttl` seconds (default: its duration and an hour); answered with `url` (on
    /// `host`, the name the asker reaches this device by) and `expires`.
    case share(ShareRequest)

    /// The name of the service.
    public static let service = "baton.playback"

    /// A file to serve to another device (see ``share(_:)``).
    public struct ShareRequest: Sendable, Equatable {
        public var uri: String
        public var client: String
        public var host: String
        public var ttl: Double?

        public init(uri: String, client: String, host: String, ttl: Double? = nil) {
            self.uri = uri
            self.client = client
            self.host = host
            self.ttl = ttl
        }
    }

    /// What to play and how.
    public struct PlayRequest: Sendable, Equatable {
        /// The queue, and the entry of it to play (0-based).
        public var queue: [String]
        public var index: Int
        /// Where to start, in seconds.
        public var position: Double
        /// Whether to load it paused there.
        public var paused: Bool
        /// The volume to set first, if any.
        public var volume: Double?
        /// Whether to play it muted (a handoff unmutes the target as it pauses the source).
        public var muted: Bool

        public init(queue: [String], index: Int = 0, position: Double = 0, paused: Bool = false, volume: Double? = nil, muted: Bool = false) {
            self.queue = queue
            self.index = index
            self.position = position
            self.paused = paused
            self.volume = volume
            self.muted = muted
        }

        /// The entry that plays.
        public var uri: String { queue[index] }
    }

    /// The command `message` asks for; ``PlaybackFailure/badRequest(_:)`` saying what is wrong.
    public init(message: ValueDictionary) throws(PlaybackFailure) {
        guard case .string(let name)? = message["command"] else {
            throw .badRequest("a baton.playback request needs command = \(Self.commandList)")
        }
        switch name {
        case "state": self = .state
        case "pause": self = .pause
        case "resume": self = .resume
        case "stop": self = .stop
        case "seek":
            if let by = try Self.number(message, "by", required: false) {
                guard message["position"] == nil else { throw .badRequest("seek: give position or by, not both") }
                self = .seekBy(by)
            } else {
                self = .seek(try Self.number(message, "position", required: true) ?? 0)
            }
        case "volume":
            let level = try Self.number(message, "level", required: true) ?? 0
            guard (0...100).contains(level) else { throw .badRequest("volume: level must be from 0 to 100, got \(level)") }
            self = .volume(level)
        case "mute": self = .mute(try Self.bool(message, "muted") ?? true)
        case "play": self = .play(try Self.playRequest(message))
        case "watch": self = .watch
        case "unwatch": self = .unwatch
        case "share":
            guard case .string(let uri)? = message["uri"], case .string(let client)? = message["client"], case .string(let host)? = message["host"],
                  !uri.isEmpty, !client.isEmpty, !host.isEmpty else {
                throw .badRequest("share needs uri, client (the address it is for) and host (this device's, as the asker reaches it)")
            }
            let ttl = try Self.number(message, "ttl", required: false)
            if let ttl, !(ttl > 0 && ttl <= 7 * 86_400) { throw .badRequest("share: ttl must be from 0 to a week of seconds, got \(ttl)") }
            self = .share(ShareRequest(uri: uri, client: client, host: host, ttl: ttl))
        default:
            throw .badRequest("unknown command \"\(name)\": use \(Self.commandList)")
        }
    }

    /// The commands, as errors list them.
    static let commandList = "state, play, pause, resume, stop, seek, volume, mute, watch, unwatch or share"

    /// The request as a message.
    public var message: ValueDictionary {
        switch self {
        case .state: ["command": "state"]
        case .pause: ["command": "pause"]
        case .resume: ["command": "resume"]
        case .stop: ["command": "stop"]
        case .seek(let position): ["command": "seek", "position": .double(position)]
        case .seekBy(let offset): ["command": "seek", "by": .double(offset)]
        case .volume(let level): ["command": "volume", "level": .double(level)]
        case .mute(let muted): ["command": "mute", "muted": .bool(muted)]
        case .watch: ["command": "watch"]
        case .unwatch: ["command": "unwatch"]
        case .share(let request):
            {
                var message: ValueDictionary = [
                    "command": "share", "uri": .string(request.uri), "client": .string(request.client), "host": .string(request.host),
                ]
                if let ttl = request.ttl { message["ttl"] = .double(ttl) }
                return message
            }()
        case .play(let request):
            {
                var message: ValueDictionary = [
                    "command": "play", "position": .double(request.position), "paused": .bool(request.paused),
                ]
                if request.queue.count == 1 {
                    message["uri"] = .string(request.queue[0])
                } else {
                    message["queue"] = .array(request.queue.map { .string($0) })
                    message["index"] = .int(Int64(request.index))
                }
                if let volume = request.volume { message["volume"] = .double(volume) }
                if request.muted { message["muted"] = .bool(true) }
                return message
            }()
        }
    }

    private static func playRequest(_ message: ValueDictionary) throws(PlaybackFailure) -> PlayRequest {
        var queue: [String] = []
        var index = 0
        switch (message["uri"], message["queue"]) {
        case (.string(let uri)?, nil):
            queue = [uri]
        case (nil, .array(let items)?):
            for item in items {
                guard case .string(let uri) = item else { throw .badRequest("play: queue must be an array of URIs") }
                queue.append(uri)
            }
            if let given = message["index"] {
                guard case .int(let number) = given, number >= 0, number < queue.count else {
                    throw .badRequest("play: index must be an integer from 0 to \(queue.count - 1)")
                }
                index = Int(number)
            }
        default:
            throw .badRequest("play needs uri = \"...\" or queue = {...} (not both)")
        }
        guard !queue.isEmpty, !queue.contains(where: \.isEmpty) else { throw .badRequest("play: nothing to play") }
        let position = try number(message, "position", required: false) ?? 0
        guard position >= 0 else { throw .badRequest("play: position must not be negative, got \(position)") }
        let volume = try number(message, "volume", required: false)
        if let volume, !(0...100).contains(volume) { throw .badRequest("play: volume must be from 0 to 100, got \(volume)") }
        return PlayRequest(
            queue: queue, index: index, position: position, paused: try bool(message, "paused") ?? false,
            volume: volume, muted: try bool(message, "muted") ?? false)
    }

    /// A number field: an integer or a finite double.
    private static func number(_ message: ValueDictionary, _ key: String, required: Bool) throws(PlaybackFailure) -> Double? {
        switch message[key] {
        case .int(let value)?: return Double(value)
        case .double(let value)? where value.isFinite: return value
        case nil where !required: return nil
        default: throw .badRequest("\(key) must be a number of seconds\(required ? " and is required" : "")")
        }
    }

    private static func bool(_ message: ValueDictionary, _ key: String) throws(PlaybackFailure) -> Bool? {
        switch message[key] {
        case .bool(let value)?: return value
        case nil: return nil
        default: throw .badRequest("\(key) must be true or false")
        }
    }
}
