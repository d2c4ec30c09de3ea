/// Why an account operation failed, in words for the person at the keyboard. Never carries a
/// key or a code.
public enum SecurityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The configuration folder cannot be read or written.
    case storage(String)
    /// A stored key or certificate cannot be read: damaged, or from something else.
    case damaged(String)
    /// A certificate is not one this account issued, has expired, or was revoked.
    case refused(String)

    /// The reason, for people.
    public var description: String {
        switch self {
        case .storage(let why), .damaged(let why), .refused(let why): why
        }
    }
}
