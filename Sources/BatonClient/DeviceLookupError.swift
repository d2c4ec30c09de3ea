import BatonCore

/// Why a device name or id did not lead to one device that answers: a distinct cause each,
/// with the status and class it answers with.
public enum DeviceLookupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nobody knows the name or id: not seen now, never seen, not enrolled. `suggestions` are
    /// the known names closest to it.
    case notFound(String, suggestions: [String])
    /// The name or id is of a device enrolled in the account or met before (`ids`), but it
    /// answers nowhere now: switched off, or off the network.
    case knownButUnavailable(String, ids: [String])
    /// Several devices answer to the name: their ids.
    case ambiguous(String, ids: [String])

    /// The Rome status it answers with: `not_found`, `remote_system_unavailable`, `ambiguous`.
    public var status: String {
        switch self {
        case .notFound: "not_found"
        case .knownButUnavailable: "remote_system_unavailable"
        case .ambiguous: "ambiguous"
        }
    }

    /// Its cause: `not_found` for an unknown or ambiguous name, `not_answering` for a device
    /// known but not answering.
    public var cause: FailureCause {
        switch self {
        case .notFound, .ambiguous: .notFound
        case .knownButUnavailable: .notAnswering
        }
    }

    /// Its class, the cause's: `not_found` (68), or `unavailable` (69).
    public var errorClass: ErrorClass { cause.errorClass }

    /// What went wrong, in words, without the status.
    public var message: String {
        switch self {
        case .notFound(let name, let suggestions):
            let guess = suggestions.isEmpty ? "" : "; did you mean " + suggestions.map { "\"\($0)\"" }.joined(separator: " or ") + "?"
            return "no device named or with the id \"\(name)\" was found\(guess)"
        case .knownButUnavailable(let name, let ids):
            let which = ids.count == 1 && ids[0].lowercased() != name.lowercased() ? " (\(ids[0]))" : ""
            return "\"\(name)\"\(which) is a known device but answers nowhere: it is switched off or off the network"
        case .ambiguous(let name, let ids):
            return "\(ids.count) devices are named \"\(name)\": \(ids.joined(separator: ", ")); give the id instead"
        }
    }

    /// `status: message`.
    public var description: String { "\(status): \(message)" }
}
