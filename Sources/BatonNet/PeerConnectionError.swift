import BatonCore
import NIOCore

extension TimeAmount {
    /// The wait in words, to the millisecond, as durations are given: `1s`, `250ms`, `2m`.
    public var words: String {
        DurationText.format(.milliseconds((nanoseconds + 500_000) / 1_000_000))
    }
}

/// Why a request got no response.
public enum PeerConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection ended first; `reason` says how.
    case closed(String)
    /// The message is over the size the peer accepts: it was not sent.
    case tooLarge(size: Int, limit: Int)
    /// The channel is not open on this connection.
    case noSuchChannel(UInt64)
    /// This end refused the peer's certificate (another account, another device, expired,
    /// revoked); `reason` says which.
    case untrustedPeer(String)
    /// The peer refused this end: its certificate, the protocol (TLS or not), or what it sent.
    case refusedByPeer(String)
    /// The request's deadline passed before its answer came.
    case timedOut(String)

    public var description: String {
        switch self {
        case .closed(let reason): "connection closed: \(reason)"
        case .tooLarge(let size, let limit): "message of \(size) bytes is over the peer's limit of \(limit) bytes"
        case .noSuchChannel(let id): "channel \(id) is not open"
        case .untrustedPeer(let reason): "refused the agent: \(reason)"
        case .refusedByPeer(let reason): reason
        case .timedOut(let reason): reason
        }
    }
}

extension PeerConnectionError {
    /// Why, typed: a request that met this error failed for this cause.
    public var cause: FailureCause {
        switch self {
        case .timedOut: .timedOut
        case .tooLarge: .tooLarge
        case .untrustedPeer: .denied
        case .refusedByPeer: .refused
        case .noSuchChannel: .unavailable
        case .closed: .unreachable
        }
    }
}
