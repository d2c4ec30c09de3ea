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

    /// A reply with `status`; `message` is kept only with `success`.
    public init(status: ResponseStatus, message: ValueDictionary? = nil, detail: String = "") {
        self.status = status
        self.message = status == .success ? message : nil
        self.detail = detail
    }

    /// `success` with `message`.
    public static func success(_ message: ValueDictionary) -> ServiceReply {
        ServiceReply(status: .success, message: message)
    }
}
