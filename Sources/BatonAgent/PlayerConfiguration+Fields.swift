import BatonCore
import BatonLua

extension PlayerConfiguration {
    /// The `player = {...}` of app `app`: `backend = "mpv"` with `socket`, `args` and
    /// `executable`, or `backend = "mpd"` with `address` (host:port, default 127.0.0.1:6600)
    /// and `music_directory` and `timeout` (seconds a command may take, default 2). Errors name
    /// the app and the field.
    init(fields: ValueDictionary, app: String) throws {
        func fail(_ text: String) -> HostError { .message("app \(app): player: \(text)") }
        func string(_ key: String) throws -> String? {
            guard let value = fields[key] else { return nil }
            guard case .string(let text) = value, !text.isEmpty else { throw fail("\(key) must be a non-empty string") }
            return text
        }
        func allow(_ keys: Set<String>) throws {
            for key in fields.keys where !keys.contains(key) {
                throw fail("unknown field '\(key)' (fields: \(keys.sorted().joined(separator: ", ")))")
            }
        }
        switch try string("backend") {
        case "mpv":
            try allow(["backend", "socket", "args", "executable", "on_stop"])
            var arguments: [String] = []
            if let given = fields["args"] {
                guard case .array(let items) = given else { throw fail("args must be a list of strings") }
                for item in items {
                    guard case .string(let argument) = item else { throw fail("args must be a list of strings") }
                    arguments.append(argument)
                }
            }
            let socket = try string("socket")
            if let socket, socket.utf8.count > 100 { throw fail("socket path is too long for a Unix socket (at most 100 bytes)") }
            self = .mpv(socket: socket, arguments: arguments, executable: try string("executable") ?? "mpv")
        case "mpd":
            try allow(["backend", "address", "music_directory", "timeout", "on_stop"])
            let text = try string("address") ?? "127.0.0.1:6600"
            guard let address = RemoteDevice.Endpoint(text) else { throw fail("address must be host:port, got \"\(text)\"") }
            var timeout = 2.0
            switch fields["timeout"] {
            case nil: break
            case .int(let seconds)? where 0 < seconds && seconds <= 600: timeout = Double(seconds)
            case .double(let seconds)? where 0 < seconds && seconds <= 600: timeout = seconds
            default: throw fail("timeout must be a number of seconds above 0 and at most 600")
            }
            self = .mpd(host: address.host, port: address.port, musicDirectory: try string("music_directory"), timeout: timeout)
        case let other:
            throw fail("backend must be \"mpv\" or \"mpd\", got \(other.map { "\"\($0)\"" } ?? "nothing")")
        }
    }

    /// The `on_stop` of app `app`'s `player = {...}`: `"leave"` (the default), `"pause"` or
    /// `"stop"`.
    static func stopAction(fields: ValueDictionary, app: String) throws -> AgentConfiguration.PlayerStopAction {
        guard let value = fields["on_stop"] else { return .leave }
        let choices = AgentConfiguration.PlayerStopAction.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard case .string(let text) = value, let action = AgentConfiguration.PlayerStopAction(rawValue: text) else {
            throw HostError.message("app \(app): player: on_stop must be one of \(choices)")
        }
        return action
    }
}
