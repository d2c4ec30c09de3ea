import Logging
import NIOCore

extension PeerConnection {
    /// The peer's IP address, without its port (`192.168.1.20`); its description when it has
    /// none (not a TCP link).
    public var remoteIPAddress: String {
        (link as? TCPLink)?.channel?.remoteAddress?.ipAddress ?? remoteDescription
    }

    /// A join attempt refused, for the log: counted in the server's rate-limited refusal log
    /// like other refusals (the first few of an interval in full, then one summary line), so
    /// that a flood of attempts cannot flood the log. On the connection's loop.
    public func noteRefusedJoin(_ detail: String) {
        trouble(.join, "refused a device joining the account", detail)
    }

    /// A stranger's launch refused, for the log, counted as a refused join is: a stranger
    /// sending launches cannot flood the log either. On the connection's loop.
    public func noteRefusedLaunch(_ detail: String) {
        trouble(.launch, "refused an anonymous launch", detail)
    }
}
