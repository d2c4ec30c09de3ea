/// Why a ``Value`` is unacceptable, and where inside it.
public struct ValueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the problem is, in the syntax of ``ValuePath`` (for example `message.items[3]`).
    public var path: String
    /// What is wrong there, for a human (for example `expected string like items[1], got integer`).
    public var reason: String

    /// Creates an error for `path` with `reason`.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// `"<path>: <reason>"`, the text shown to users.
    public var description: String { "\(path): \(reason)" }

    /// Whether the value breaks a limit (nested past ``Value/maxDepth``) rather than a rule:
    /// a request that carries one is answered `resource_limits_exceeded` (a launch,
    /// `value_set_too_large`) rather than `failure`.
    public var isOverLimit: Bool { reason.hasPrefix("nested deeper than") }
}
