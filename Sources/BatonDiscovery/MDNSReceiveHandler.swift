import Logging
import NIOCore

/// Turns datagrams into ``MDNSReceivedMessage``s. Anything that does not parse as DNS is
/// dropped, counted and logged at debug: packets come from anyone on the link.
final class MDNSReceiveHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let family: MDNSAddressFamily
    private let logger: Logger
    private let onMessage: (MDNSReceivedMessage) -> Void
    private let onMalformed: () -> Void

    /// Reads datagrams of `family`; `onMessage` gets each message that parses and `onMalformed`
    /// is called once for each that does not. Both run on the channel's event loop.
    init(
        family: MDNSAddressFamily, logger: Logger, onMessage: @escaping (MDNSReceivedMessage) -> Void,
        onMalformed: @escaping () -> Void
    ) {
        self.family = family
        self.logger = logger
        self.onMessage = onMessage
        self.onMalformed = onMalformed
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let message: DNSMessage
        do {
            message = try DNSMessage(parsing: envelope.data)
        } catch {
            onMalformed()
            logger.debug(
                "mDNS: dropped a malformed packet",
                metadata: [
                    "from": "\(envelope.remoteAddress)", "bytes": "\(envelope.data.readableBytes)",
                    "error": "\(error)",
                ])
            return
        }
        let info = envelope.metadata?.packetInfo
        onMessage(
            MDNSReceivedMessage(
                message: message, source: envelope.remoteAddress, interfaceIndex: info?.interfaceIndex,
                family: family, wasMulticast: info?.destinationAddress.isMulticast ?? true))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram socket reports ICMP errors from earlier sends here; the socket stays usable.
        logger.debug("mDNS: socket error", metadata: ["family": "\(family)", "error": "\(error)"])
    }
}
