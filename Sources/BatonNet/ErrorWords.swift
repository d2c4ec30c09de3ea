import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Errors as a person reads them: what failed, in words, without the insides of the code
/// that met it (no Swift type or call signatures, no `(errno: 104)`), so that whatever a
/// command prints has balanced parentheses and means something to its reader.
public enum ErrorWords {
    /// `error` in words: a system call's failure as the system says it ("connection reset by
    /// peer"), a connection attempt by what went wrong with each address, anything else as it
    /// describes itself.
    public static func of(_ error: any Error) -> String {
        if let io = error as? IOError { return system(io.errnoCode) }
        if case ChannelError.connectTimeout = error { return "no answer within the connect timeout" }
        if let channel = error as? ChannelError {
            switch channel {
            case .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed, .eof: return "the connection was closed"
            default: break
            }
        }
        if let failure = error as? NIOConnectionError {
            if failure.connectionErrors.isEmpty { return "cannot resolve \(failure.host)" }
            let causes = failure.connectionErrors.map { attempt -> String in
                if let io = attempt.error as? IOError, io.errnoCode == ECONNREFUSED {
                    return "connection refused (is an agent listening there?)"
                }
                return of(attempt.error)
            }
            return Set(causes).sorted().joined(separator: "; ")
        }
        return "\(error)"
    }

    /// The system's words for `code`, in lower case as Baton's messages are: "connection refused".
    public static func system(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        guard let first = text.first else { return "error \(code)" }
        return first.lowercased() + text.dropFirst()
    }
}
