import BatonSecurity
import BatonWire
import NIOCore

/// What carries a session's frames and says who the peer is: the part of a connection under
/// the conversation. TCP with mutual TLS is the first (``TCPLink``). A relay through a broker is
/// the next: there TLS ends at the broker, so the peer proves itself in a handshake signed with
/// its device key (judged by the same ``PeerTrust`` rules), and messages may arrive twice after
/// a reconnect. Either way ``PeerConnection`` sees the same contract:
///
/// - the peer's identity comes first (``LinkSession/linkEstablished(_:peer:)``), before any frame;
/// - every frame the peer sent arrives exactly once, in order (a link that may see a copy drops
///   it);
/// - the end comes once (``LinkSession/linkClosed(_:)``), after which nothing more arrives.
///
/// A link lives on its ``eventLoop``; call it there.
public protocol Link: AnyObject, Sendable {
    /// The loop the link and its session live on.
    var eventLoop: any EventLoop { get }
    /// Where the peer is, for logs: `192.168.1.20:47300`.
    var peerDescription: String { get }
    /// Who hears what the link does. Set once, before the link starts.
    var session: (any LinkSession)? { get set }
    /// Appends one frame, which `encode` writes (refusing one over `limit` bytes), to what goes
    /// out next; it goes out by the end of the current event-loop tick at the latest. Returns
    /// what `encode` threw, with nothing appended.
    func write(limit: Int, _ encode: (inout ByteBuffer, _ limit: Int) throws(WireError) -> Void) -> WireError?
    /// Sends what was written, then closes.
    func close()
    /// `true`: the session is busy and wants no more frames for now (the link stops reading
    /// from the peer); `false`: it may have them again.
    func pauseReceiving(_ paused: Bool)
}

extension Link {
    /// A link that cannot hold its peer back ignores it.
    public func pauseReceiving(_ paused: Bool) {}
}

/// What a ``Link`` tells the session above it, on the link's loop.
public protocol LinkSession: AnyObject {
    /// The peer proved who it is (a TLS handshake, a signed handshake, or nothing to prove on
    /// a plaintext loopback link).
    func linkEstablished(_ link: any Link, peer: PeerIdentity)
    /// A frame arrived (or the news of one over this end's limit).
    func link(_ link: any Link, received event: FrameEvent)
    /// The link cannot go on; it closes next.
    func link(_ link: any Link, failed failure: LinkFailure)
    /// The link is gone; nothing more arrives.
    func linkClosed(_ link: any Link)
}

/// Why a link failed.
public enum LinkFailure: Sendable, Equatable {
    /// The bytes that came are not frames (a bad length prefix, a payload that is not a
    /// `Frame`, a stream cut mid-frame).
    case protocolError(String)
    /// The peer was not let in, or did not let this end in; `logLine` says why for the log
    /// (never keys or certificates).
    case refused(PeerConnectionError, logLine: String)
    /// Anything else (an I/O error).
    case failed(String)
}
