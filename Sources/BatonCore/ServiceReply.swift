/// The answer to a request on an app-service channel: how it went and, on `success`, the
/// message. The one reply type of every layer: what a provider answers, what travels in a
/// ServiceResponse, and what a caller gets back.
public struct ServiceReply: Sendable, Equatable {
    /// How the request went.
    public var status: ResponseStatus
    /// The reply's message; set with `success` only.
    public var message: ValueDictionary?
    /// For people: why, when the status is not `success`. Never parse it.
    public var detail: String
    /// Why, typed, when this side knows more than the status says (it timed out, the channel
    /// was refused, the playback service answered `bad_request`); never sent. See ``failureCause``.
    public var cause: FailureCause?

    /// A reply with `status`; `message` is kept only with `success`.
    public init(status: ResponseStatus, message: ValueDictionary? = nil, detail: String = "", cause: FailureCause? = nil) {
        self.status = status
        self.message = status == .success ? message : nil
        self.detail = detail
        self.cause = cause
    }

    /// Why the request failed: ``cause`` when set, else what the status stands for; nil for a
    /// `success` that carries no cause.
    public var failureCause: FailureCause? { cause ?? FailureCause(status) }

    /// `success` with `message`.
    public static func success(_ message: ValueDictionary) -> ServiceReply {
        ServiceReply(status: .success, message: message)
    }
}
