import Logging
import NIOCore

/// One connection's inbound side: gathers bytes, cuts them into packets with the
/// state-free decoder and hands each to the client. Malformed bytes close the connection.
final class MQTTConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let client: MQTTClient
    private let generation: Int
    private let maximumPacketSize: Int
    private var pending: ByteBuffer?

    init(client: MQTTClient, generation: Int, maximumPacketSize: Int) {
        self.client = client
        self.generation = generation
        self.maximumPacketSize = maximumPacketSize
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if pending == nil {
            pending = bytes
        } else {
            pending!.writeBuffer(&bytes)
        }
        while pending != nil {
            let packet: MQTTPacket?
            do {
                packet = try MQTTPacket.decode(from: &pending!, maximumPacketSize: maximumPacketSize)
            } catch {
                pending = nil
                client.connectionLost(generation: generation, reason: "bad packet from the broker: \(error)", loss: .transient)
                context.close(promise: nil)
                return
            }
            guard let packet else { break }
            client.received(packet, generation: generation)
        }
        if let buffer = pending {
            if buffer.readableBytes == 0 {
                pending = nil
            } else if buffer.readerIndex > 65_536 {
                pending!.discardReadBytes()
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Our own closes change the client's generation first, so this is the broker's (or the network's).
        client.connectionLost(generation: generation, reason: "the broker closed the connection", loss: .closedByBroker)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        client.connectionLost(generation: generation, reason: "connection error: \(error)", loss: .transient)
        context.close(promise: nil)
    }
}
