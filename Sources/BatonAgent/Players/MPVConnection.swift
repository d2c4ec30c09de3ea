import BatonCore
import BatonNet
import NIOCore
import NIOPosix

/// One connection to an mpv's JSON IPC socket: commands, each answered or failed by its
/// deadline, and mpv's events as they come. Everything runs on ``eventLoop``; nothing blocks it.
///
/// A line that is not mpv's protocol (garbage, or one longer than ``maxLineLength``) ends the
/// connection: every call waiting then fails with ``MPVError/garbage(_:)``, as when mpv goes away
/// they fail with ``MPVError/closed(_:)``.
public final class MPVConnection: ChannelInboundHandler, @unchecked Sendable {
    public typealias InboundIn = ByteBuffer

    /// The loop the connection lives on; its callbacks run there.
    public let eventLoop: any EventLoop
    /// Told each event mpv sends. Set on the loop.
    public var onEvent: ((MPVEvent) -> Void)?
    /// Told once, when the connection ends, why. Set on the loop.
    public var onClosed: ((MPVError) -> Void)?
    /// Whether the connection is still up.
    public private(set) var isOpen = true
    /// How long a call waits for its answer when it names no timeout of its own. Set on the loop.
    public var callTimeout: TimeAmount = .seconds(2)

    /// The longest line a connection takes; a longer one is not the player talking.
    public static let maxLineLength = LineBuffer.maxLineLength

    private var channel: (any Channel)?
    private var lines = LineBuffer()
    private let calls: PendingCalls<JSON>
    private var failure: MPVError?
    /// Who else hears events (``watchEvents(_:)``), by token.
    private let watchers = Watchers<MPVEvent>()

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.calls = PendingCalls(eventLoop: eventLoop)
    }

    /// Connects to the mpv listening on `path`, giving up after `timeout`.
    public static func connect(path: String, on eventLoop: any EventLoop, timeout: TimeAmount = .seconds(2)) -> EventLoopFuture<MPVConnection> {
        let connection = MPVConnection(eventLoop: eventLoop)
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(connection) }
            }
            .connect(unixDomainSocketPath: path)
            .map { _ in connection }
            .flatMapErrorThrowing { error in
                throw MPVError.closed("cannot connect to mpv at \(path): \(ErrorWords.of(error))")
            }
    }

    /// Sends the command `arguments` (mpv's array form, or an object for the named form) and
    /// answers with its `data` (null when it has none), or fails: ``MPVError/failed(_:)`` with
    /// mpv's error, ``MPVError/timedOut(_:)`` after `timeout` (nil: ``callTimeout``), or why the connection ended.
    public func command(_ arguments: JSON, timeout: TimeAmount? = nil) -> EventLoopFuture<JSON> {
        guard eventLoop.inEventLoop else {
            return eventLoop.flatSubmit { self.command(arguments, timeout: timeout) }
        }
        guard isOpen, let channel else {
            return eventLoop.makeFailedFuture(failure ?? MPVError.closed("the connection to mpv is closed"))
        }
        let timeout = timeout ?? callTimeout
        let (id, answer) = calls.add(timeout: timeout) { MPVError.timedOut("mpv did not answer within \(timeout.words)") }
        channel.writeAndFlush(ByteBuffer(string: MPVMessage.command(arguments, id: id)), promise: nil)
        return answer
    }

    /// As ``command(_:timeout:)`` for `get_property`.
    public func property(_ name: String, timeout: TimeAmount? = nil) -> EventLoopFuture<JSON> {
        command(.array([.string("get_property"), .string(name)]), timeout: timeout)
    }

    /// Calls `handler` with each event from now on, until the returned stop is called, beside
    /// ``onEvent``. On the loop.
    func watchEvents(_ handler: @escaping (MPVEvent) -> Void) -> () -> Void {
        eventLoop.preconditionInEventLoop()
        return watchers.add(handler)
    }

    /// Closes the connection; calls still waiting fail with ``MPVError/closed(_:)``.
    public func close() {
        eventLoop.execute { [self] in
            end(.closed("the connection to mpv was closed"))
        }
    }

    // MARK: ChannelInboundHandler

    public func handlerAdded(context: ChannelHandlerContext) {
        channel = context.channel
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        lines.append(&bytes)
        while isOpen, let line = lines.nextLine() {
            do {
                try handle(MPVMessage(line: line.readableBytesView))
            } catch {
                end(error)
            }
        }
        if lines.compactIsOverlong() {
            end(.garbage("mpv sent a line longer than \(Self.maxLineLength) bytes"))
        }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        end(.closed("mpv closed the connection"))
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(.closed("the connection to mpv failed: \(ErrorWords.of(error))"))
    }

    private func handle(_ message: MPVMessage) {
        switch message {
        case .reply(let id, let result):
            calls.complete(id, with: result.mapError { $0 })
        case .event(let event):
            onEvent?(event)
            watchers.tell(event)
        case .other:
            break
        }
    }

    /// The connection is over, for `reason`: every waiting call fails with it, once.
    private func end(_ reason: MPVError) {
        guard isOpen else { return }
        isOpen = false
        failure = reason
        calls.failAll(reason)
        channel?.close(promise: nil)
        onClosed?(reason)
        onClosed = nil
        onEvent = nil
        watchers.removeAll()
    }
}
