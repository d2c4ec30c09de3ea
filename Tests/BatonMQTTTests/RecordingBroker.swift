import BatonMQTT
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP server that answers each CONNECT with a CONNACK saying whether it kept the session,
/// acknowledges nothing, and records the packets each connection sent; the first connection
/// is closed as soon as it has sent a PUBLISH (a broker lost before its PUBACK).
final class RecordingBroker: Sendable {
    let port: Int
    private let channel: any Channel
    private let received: NIOLockedValueBox<[[MQTTPacket]]>

    /// The packets each connection sent, in order, one list a connection.
    var connections: [[MQTTPacket]] { received.withLockedValue { $0 } }

    init(sessionPresent: Bool) async throws {
        let received = NIOLockedValueBox<[[MQTTPacket]]>([])
        self.received = received
        channel = try await ServerBootstrap(group: testGroup)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                let index = received.withLockedValue { $0.append([]); return $0.count - 1 }
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(
                        Recorder(index: index, sessionPresent: sessionPresent, received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress!.port!
    }

    func close() async throws { try await channel.close() }

    private final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let index: Int
        let sessionPresent: Bool
        let received: NIOLockedValueBox<[[MQTTPacket]]>
        var buffer = ByteBuffer()

        init(index: Int, sessionPresent: Bool, received: NIOLockedValueBox<[[MQTTPacket]]>) {
            self.index = index
            self.sessionPresent = sessionPresent
            self.received = received
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            buffer.writeBuffer(&bytes)
            while let packet = try? MQTTPacket.decode(from: &buffer, maximumPacketSize: 1 << 20) {
                received.withLockedValue { $0[index].append(packet) }
                switch packet {
                case .connect:
                    let connack: [UInt8] = [0x20, 0x03, sessionPresent ? 0x01 : 0x00, 0x00, 0x00]
                    context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: connack)), promise: nil)
                case .publish where index == 0:
                    context.close(promise: nil)
                    return
                default:
                    break
                }
            }
        }
    }
}
