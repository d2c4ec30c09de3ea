import BatonCore
import BatonLua

extension PlayerConfiguration {
    /// The `player = {...}` of app `app`: `backend` names one of ``PlayerBackends/all``, which
    /// reads the rest (its own fields and `on_stop`; any other is an error listing them).
    /// Errors name the app and the field.
    init(fields: ValueDictionary, app: String) throws {
        let reader = PlayerFields(fields, app: app)
        let names = PlayerBackends.all.map { "\"\($0.name)\"" }.joined(separator: ", ")
        let name = try reader.string("backend")
        guard let name, let backend = PlayerBackends.named(name) else {
            throw reader.fail("backend must be one of \(names), got \(name.map { "\"\($0)\"" } ?? "nothing")")
        }
        let known = backend.fields.union(["backend", "on_stop"])
        for key in fields.keys.sorted() where !known.contains(key) {
            throw reader.fail("unknown field '\(key)' (fields: \(known.sorted().joined(separator: ", ")))")
        }
        self.init(backend: try backend.init(reader))
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
