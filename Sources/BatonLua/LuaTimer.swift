import NIOCore

/// A pending `baton.after` or `baton.every`; it keeps the run alive until it fires or stops.
final class LuaTimer: @unchecked Sendable {
    static let metatable = "baton.timer"

    let id: Int
    let interval: TimeAmount
    let repeats: Bool
    let location: String
    /// Registry reference of the callback.
    let functionRef: Int32
    /// Registry reference of the Lua handle, passed to the callback.
    let handleRef: Int32
    var scheduled: Scheduled<Void>?
    var nextDeadline: NIODeadline

    init(id: Int, interval: TimeAmount, repeats: Bool, location: String, functionRef: Int32, handleRef: Int32) {
        self.id = id
        self.interval = interval
        self.repeats = repeats
        self.location = location
        self.functionRef = functionRef
        self.handleRef = handleRef
        self.nextDeadline = .now() + interval
    }
}
