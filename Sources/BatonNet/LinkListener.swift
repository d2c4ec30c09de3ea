import NIOCore

/// Takes links of one kind on the agent (TCP: ``TCPListener``; the broker next) and hands each
/// to a ``ServingPolicy``, which serves it whatever its transport. A new kind of link is a new
/// listener attached to ``AgentServer/attach(_:)``.
public protocol LinkListener: AnyObject, Sendable {
    /// Starts taking links, handing each new one to `policy` (``ServingPolicy/serve(_:origin:)``)
    /// on the policy's event loop; completes once it takes them.
    func start(policy: ServingPolicy) -> EventLoopFuture<Void>
    /// Stops taking new links. The policy drains the links it serves after this; a listener
    /// whose transport carries them (a broker's) keeps it up until ``shutdown()``.
    func stopAccepting() -> EventLoopFuture<Void>
    /// Closes what is left once every link it made is closed.
    func shutdown() -> EventLoopFuture<Void>
}
