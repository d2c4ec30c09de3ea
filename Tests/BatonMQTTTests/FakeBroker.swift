import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP server that answers each connection's first bytes (its CONNECT) with a script of
/// raw bytes, then reads and ignores everything: a broker gone wrong, for the client's
/// defences. Counts connections.
final class FakeBroker: Sendable {
    let port: Int
    private let channel: any Channel
    private let connectionCount: NIOLockedValueBox<Int>

    var connections: Int { connectionCount.withLockedValue { $0 } }

    init(answer: [UInt8]) async throws {
        let count = NIOLockedValueBox(0)
        connectionCount = count
        channel = try await ServerBootstrap(group: testGroup)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                count.withLockedValue { $0 += 1 }
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(Answerer(answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress!.port!
    }

    func close() async throws { try await channel.close() }

    private final class Answerer: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let answer: [UInt8]
        var answered = false

        init(answer: [UInt8]) { self.answer = answer }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !answered else { return }
            answered = true
            context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: answer)), promise: nil)
        }
    }
}
