import BatonCore
import BatonNet
import NIOCore
import NIOPosix

/// One connection to Kodi's JSON-RPC over its raw TCP port (9090 by default; see
/// ../shared/reference/renderers.md): calls answered by id, each by its deadline, and Kodi's
/// notifications as they come. Everything runs on ``eventLoop``; nothing blocks it.
///
/// Kodi sends its objects back to back, with no newline: they are framed by their braces (see
/// ``KodiFramer``). Anything that is not a JSON-RPC object, or an object longer than
/// ``maxObjectBytes``, ends the connection: every call waiting fails with
/// ``KodiError/garbage(_:)``, as they fail with ``KodiError/closed(_:)`` when Kodi goes away.
/// A call that misses its deadline fails alone; the connection stays up.
public final class KodiConnection: ChannelInboundHandler, @unchecked Sendable {
    public typealias InboundIn = ByteBuffer

    /// The loop the connection lives on; its callbacks run there.
    public let eventLoop: any EventLoop
    /// Told once, when the connection ends, why. Set on the loop.
    public var onClosed: ((KodiError) -> Void)?
    /// Whether the connection is still up.
    public private(set) var isOpen = true
    /// How long a call waits for its answer when it names no timeout of its own. Set on the loop.
    public var callTimeout: TimeAmount = .seconds(2)
    /// Where it is connected, for messages.
    public let address: String

    /// The longest object a connection takes; a longer one is not Kodi talking.
    public static let maxObjectBytes = KodiFramer.maxObjectBytes

    private var channel: (any Channel)?
    private var framer = KodiFramer()
    private let calls: PendingCalls<JSON>
    private var failure: KodiError?
    /// Who hears notifications (``watchNotifications(_:)``), by token.
    private let watchers = Watchers<KodiNotification>()

    private init(eventLoop: any EventLoop, address: String) {
        self.eventLoop = eventLoop
        self.address = address
        self.calls = PendingCalls(eventLoop: eventLoop)
    }

    /// Connects to the Kodi at `host`:`port` and checks that it is one (its `JSONRPC.Ping`
    /// answers `pong`), all within `timeout`: fails with ``KodiError/closed(_:)`` when nothing
    /// listens, ``KodiError/timedOut(_:)`` when what listens does not answer, and
    /// ``KodiError/garbage(_:)`` when it answers something else.
    public static func connect(host: String, port: Int, on eventLoop: any EventLoop, timeout: TimeAmount = .seconds(2)) -> EventLoopFuture<KodiConnection> {
        let address = "\(host):\(port)"
        let connection = KodiConnection(eventLoop: eventLoop, address: address)
        let deadline = NIODeadline.now() + timeout
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(connection) }
            }
            .connect(host: host, port: port)
            .flatMapErrorThrowing { error in
                throw KodiError.closed("cannot connect to Kodi at \(address): \(ErrorWords.of(error))")
            }
            .flatMap { _ in
                connection.call("JSONRPC.Ping", timeout: max(deadline - .now(), .milliseconds(1)))
                    .flatMapErrorThrowing { error in
                        connection.close()
                        if case KodiError.timedOut = error {
                            throw KodiError.timedOut("what listens at \(address) did not answer Kodi's JSONRPC.Ping within \(timeout.words)")
                        }
                        throw error
                    }
            }
            .flatMapThrowing { pong in
                guard pong == .string("pong") else {
                    connection.close()
                    throw KodiError.garbage("what listens at \(address) answered JSONRPC.Ping with \(pong.serialized().prefix(80)), not pong")
                }
                return connection
            }
    }

    /// Calls `method` with `params` and answers with its `result`, or fails:
    /// ``KodiError/failed(code:message:)`` with Kodi's error, ``KodiError/timedOut(_:)`` after
    /// `timeout` (nil: ``callTimeout``), or why the connection ended.
    public func call(_ method: String, _ params: JSON? = nil, timeout: TimeAmount? = nil) -> EventLoopFuture<JSON> {
        guard eventLoop.inEventLoop else {
            return eventLoop.flatSubmit { self.call(method, params, timeout: timeout) }
        }
        guard isOpen, let channel else {
            return eventLoop.makeFailedFuture(failure ?? KodiError.closed("the connection to Kodi at \(address) is closed"))
        }
        let timeout = timeout ?? callTimeout
        let (id, answer) = calls.add(timeout: timeout) { [address] in
            KodiError.timedOut("Kodi at \(address) did not answer \(method) within \(timeout.words)")
        }
        channel.writeAndFlush(ByteBuffer(string: KodiMessage.call(method, params, id: id)), promise: nil)
        return answer
    }

    /// Calls `handler` with each notification from now on, until the returned stop is called
    /// or the connection ends. On the loop.
    func watchNotifications(_ handler: @escaping (KodiNotification) -> Void) -> @Sendable () -> Void {
        eventLoop.preconditionInEventLoop()
        return watchers.add(handler)
    }

    /// Closes the connection; calls still waiting fail with ``KodiError/closed(_:)``.
    public func close() {
        eventLoop.execute { [self] in end(.closed("the connection to Kodi at \(address) was closed")) }
    }

    // MARK: ChannelInboundHandler

    public func handlerAdded(context: ChannelHandlerContext) {
        channel = context.channel
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        framer.append(&bytes)
        do {
            while isOpen, let object = try framer.nextObject() {
                handle(try KodiMessage(object: object.readableBytesView))
            }
        } catch let error as KodiError {
            end(error)
        } catch KodiFramer.Failure.tooLong {
            end(.garbage("Kodi at \(address) sent an object longer than \(Self.maxObjectBytes >> 20) MiB"))
        } catch KodiFramer.Failure.notAnObject(let byte) {
            end(.garbage("Kodi at \(address) sent something that is not a JSON object (a byte \(byte) between objects)"))
        } catch {
            end(.garbage("Kodi at \(address): \(error)"))
        }
        framer.compact()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        end(.closed("Kodi at \(address) closed the connection"))
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(.closed("the connection to Kodi at \(address) failed: \(ErrorWords.of(error))"))
    }

    private func handle(_ message: KodiMessage) {
        switch message {
        case .reply(let id, let result):
            calls.complete(id, with: result.mapError { $0 })
        case .notification(let notification):
            watchers.tell(notification)
        }
    }

    /// The connection is over, for `reason`: every waiting call fails with it, once.
    private func end(_ reason: KodiError) {
        guard isOpen else { return }
        isOpen = false
        failure = reason
        calls.failAll(reason)
        channel?.close(promise: nil)
        onClosed?(reason)
        onClosed = nil
        watchers.removeAll()
    }
}
