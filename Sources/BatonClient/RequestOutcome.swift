import BatonCore

/// How a request to a device ended: its Rome status, why in words (for people; never parse
/// it) and why typed (``FailureCause``), nil for `success`.
public struct RequestOutcome<Status: CausedStatus>: Sendable {
    public var status: Status
    public var detail: String
    public var cause: FailureCause?

    /// An outcome whose cause is `cause`, else what `status` stands for.
    public init(_ status: Status, detail: String = "", cause: FailureCause? = nil) {
        self.status = status
        self.detail = detail
        self.cause = cause ?? status.impliedCause
    }
}
