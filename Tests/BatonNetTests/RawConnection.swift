@testable import BatonNet
import BatonWire
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// Runs blocking `work` on a thread of its own, off Swift's cooperative pool.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            do { continuation.resume(returning: try work()) } catch { continuation.resume(throwing: error) }
        }.start()
    }
}

/// A connection to an agent for speaking the protocol by hand (and badly): mutual TLS as the
/// shared test account's holder by default, so hostile frames reach the agent's frame decoder
/// as a real client's would; or plaintext (`tls: false`), or TLS with any context.
/// Its calls block; reads give up after `readTimeout` seconds so a test can never hang on one.
final class RawConnection: @unchecked Sendable {
    private let channel: any Channel
    private let inbox: Inbox
    /// Guards `received` and `decoder`, which only ``read()`` uses.
    private let reading = NSLock()
    /// Bytes taken from the inbox and not yet decoded.
    private var received: [UInt8] = []
    private var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))

    /// How long one ``read()`` may wait in all.
    let readTimeout: Double

    /// How long connecting and the TLS handshake may take.
    static let connectLimit: Double = 10

    /// Connects to 127.0.0.1:`port`: with TLS, as the shared test account's holder.
    convenience init(port: Int, readTimeout: Double = 10, tls: Bool = true) throws {
        guard tls, case .tls(let identity) = TestAccount.shared.security else {
            try self.init(port: port, readTimeout: readTimeout, context: nil)
            return
        }
        try self.init(port: port, readTimeout: readTimeout, context: identity.clientContext)
    }

    /// Connects to 127.0.0.1:`port` with TLS as `identity`'s device.
    convenience init(port: Int, identity: TLSIdentity, readTimeout: Double = 10) throws {
        try self.init(port: port, readTimeout: readTimeout, context: identity.clientContext)
    }

    /// Connects to 127.0.0.1:`port`, with TLS over `context` when given (the agent's certificate
    /// is accepted whatever it is: these tests judge the agent, not the other way round), and
    /// returns once the TLS handshake is done. Throws when it cannot connect or the handshake
    /// fails. `source`: the local address to connect from (another loopback address, to be
    /// another caller), else the system's choice.
    init(port: Int, readTimeout: Double = 10, context: NIOSSLContext?, source: String? = nil) throws {
        self.readTimeout = readTimeout
        let inbox = Inbox()
        self.inbox = inbox
        let loop = clientGroup.next()
        let handshake = loop.makePromise(of: Void.self)
        var bootstrap = ClientBootstrap(group: loop)
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        let connecting = bootstrap
            .connectTimeout(.seconds(Int64(Self.connectLimit)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(
                            context: context, serverHostname: nil,
                            customVerificationCallback: { _, promise in promise.succeed(.certificateVerified) }))
                    } else {
                        handshake.succeed()
                    }
                    try channel.pipeline.syncOperations.addHandler(Collector(inbox: inbox, handshake: handshake))
                }
            }
            .connect(host: "127.0.0.1", port: port)
        let channel: any Channel
        do {
            channel = try Self.wait(for: connecting, within: Self.connectLimit)
        } catch {
            handshake.fail(error)
            throw AgentFailure("connect to port \(port): \(error)")
        }
        self.channel = channel
        do {
            try Self.wait(for: handshake.futureResult, within: Self.connectLimit)
        } catch {
            channel.close(promise: nil)
            throw AgentFailure("TLS handshake with port \(port) failed: \(error)")
        }
    }

    deinit { channel.close(promise: nil) }

    /// Writes `bytes` as they are (inside TLS, when the connection has it), waiting until they
    /// are written out; errors, e.g. after the agent closed, are ignored.
    func send(_ bytes: [UInt8]) {
        let written = channel.writeAndFlush(ByteBuffer(bytes: bytes))
        _ = try? Self.wait(for: written, within: 5)
    }

    /// Writes `frame`, framed.
    func send(_ frame: Baton_V1_Frame) {
        send(Self.encode(frame))
    }

    /// `frame` as it goes on the wire: varint length, then the serialized Frame.
    static func encode(_ frame: Baton_V1_Frame) -> [UInt8] {
        var buffer = ByteBuffer()
        try! FrameEncoder.encode(frame, into: &buffer, maxFrameSize: FrameLimits.hardLimit)
        return buffer.readBytes(length: buffer.readableBytes)!
    }

    /// Closes the sending direction: the agent reads end of file. With TLS, a close_notify goes
    /// first (then the TCP half-close), and the agent's TLS layer answers it by closing the
    /// whole connection: it does not allow half-closed connections.
    func shutdownWrite() {
        let closed = channel.close(mode: .output)
        _ = try? Self.wait(for: closed, within: 5)
    }

    enum ReadResult: Equatable {
        case frame(Baton_V1_Frame)
        /// The agent closed the connection (end of file, reset, or a TLS alert or close).
        case closed
        /// Nothing arrived in time.
        case timedOut
        /// Bytes arrived that are not a frame.
        case garbage(String)
    }

    /// The next frame, or why there is none.
    func read() -> ReadResult {
        let deadline = Date().addingTimeInterval(readTimeout)
        reading.lock()
        defer { reading.unlock() }
        while true {
            var buffer = ByteBuffer(bytes: received)
            do {
                if let event = try decoder.decode(buffer: &buffer) {
                    received = buffer.readBytes(length: buffer.readableBytes) ?? []
                    switch event {
                    case .frame(let frame): return .frame(frame.wire)
                    case .oversized(let o): return .garbage("\(o)")
                    }
                }
            } catch {
                return .garbage("\(error)")
            }
            let (arrived, ended) = inbox.take(waitingUntil: deadline)
            if !arrived.isEmpty {
                received += arrived
            } else if ended {
                return .closed
            } else {
                return .timedOut
            }
        }
    }

    /// Every frame until the agent closes (or `read` gives up); the last element says how it
    /// ended.
    func readUntilClosed() -> [ReadResult] {
        var results: [ReadResult] = []
        while true {
            let next = read()
            results.append(next)
            if case .frame = next { continue }
            return results
        }
    }

    /// Says Hello (protocol version 1 unless given) and returns the agent's answer.
    func handshake(version: UInt32 = 1, maxFrameSize: UInt32 = 0, revocationList: String? = nil) -> ReadResult {
        send(Baton_V1_Frame.with {
            $0.hello = .with {
                $0.protocolVersion = version
                $0.deviceName = "raw"
                $0.maxFrameSize = maxFrameSize
                if let revocationList { $0.revocationList = revocationList }
            }
        })
        return read()
    }

    /// What the connection ended with, if it did: nil for a clean end, else the error (a TLS
    /// alert, a reset).
    var endError: (any Error)? { inbox.endError }

    /// `future`'s value, waiting at most `limit` seconds for it. Not `wait()`: that has no limit.
    private static func wait<T: Sendable>(for future: EventLoopFuture<T>, within limit: Double) throws -> T {
        let outcome = Outcome<T>()
        future.whenComplete { outcome.set($0) }
        guard let result = outcome.wait(within: limit) else { throw AgentFailure("no answer within \(limit) s") }
        return try result.get()
    }
}

extension RawConnection.ReadResult {
    /// The Goodbye this is, if it is one.
    var goodbye: Baton_V1_Goodbye? {
        if case .frame(let frame) = self, case .goodbye(let goodbye) = frame.body { return goodbye }
        return nil
    }
}

/// A future's result, handed to a blocked thread.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var result: Result<T, any Error>?

    func set(_ result: Result<T, any Error>) {
        lock.withLock { self.result = result }
        done.signal()
    }

    func wait(within limit: Double) -> Result<T, any Error>? {
        guard done.wait(timeout: .now() + limit) == .success else { return nil }
        return lock.withLock { result }
    }
}

/// The bytes a ``RawConnection`` received and whether (and how) the connection ended, handed
/// from the event loop to the blocking reader.
private final class Inbox: @unchecked Sendable {
    private let condition = NSCondition()
    private var bytes: [UInt8] = []
    private var ended = false
    private var error: (any Error)?

    func append(_ buffer: ByteBuffer) {
        condition.lock()
        bytes += buffer.readableBytesView
        condition.broadcast()
        condition.unlock()
    }

    func end(_ error: (any Error)? = nil) {
        condition.lock()
        if !ended { self.error = error }
        ended = true
        condition.broadcast()
        condition.unlock()
    }

    var endError: (any Error)? {
        condition.lock()
        defer { condition.unlock() }
        return error
    }

    /// Whatever arrived, waiting until `deadline` for something to arrive or the end; and
    /// whether the connection has ended.
    func take(waitingUntil deadline: Date) -> (bytes: [UInt8], ended: Bool) {
        condition.lock()
        defer { condition.unlock() }
        while bytes.isEmpty, !ended, condition.wait(until: deadline) {}
        let taken = bytes
        bytes = []
        return (taken, ended)
    }
}

/// The last handler of a ``RawConnection``'s pipeline: passes what arrives to the inbox,
/// completes the handshake promise when TLS is up, and ends the inbox when the connection goes.
private final class Collector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let inbox: Inbox
    private let handshake: EventLoopPromise<Void>

    init(inbox: Inbox, handshake: EventLoopPromise<Void>) {
        self.inbox = inbox
        self.handshake = handshake
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inbox.append(unwrapInboundIn(data))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent { handshake.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS alert or a reset: the connection is over either way.
        handshake.fail(error)
        inbox.end(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshake.fail(AgentFailure("the agent closed the connection"))
        inbox.end()
        context.fireChannelInactive()
    }
}
