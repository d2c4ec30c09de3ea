import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// mDNS over UDP port 5353: one IPv4 socket on 0.0.0.0:5353 and one IPv6 socket on [::]:5353,
/// joined to 224.0.0.251 and ff02::fb on every up, multicast-capable interface.
///
/// Both sockets set SO_REUSEADDR and SO_REUSEPORT, so they share the port with avahi, Bonjour,
/// python-zeroconf and other Baton processes on the host; the system gives each of them every
/// multicast datagram. Multicast loopback is on, so those processes hear us too, and we hear
/// ourselves (the responder and browser tell their own records apart). Multicast goes out with
/// TTL / hop limit 255 (RFC 6762 §11).
///
/// A one-shot query (``sendOneShotQuery(_:listeningFor:onResponse:)``) goes out from a socket of
/// its own on an ephemeral port, so that its unicast replies reach us: a reply to port 5353
/// would go to whichever of the host's port-5353 sockets the system picks.
///
/// The interfaces are looked at again every ``Configuration/interfaceRescanInterval``: new ones
/// are joined and gone ones left, and the responder and browser are told. Packets that are not
/// DNS are dropped and counted in ``statistics``.
///
/// All socket work, interface listing included, happens on ``eventLoop``'s thread: a loop whose
/// thread has entered a network namespace runs mDNS in that namespace.
public final class MDNSTransport: MDNSMessageTransport, @unchecked Sendable {
    /// The loop every socket, timer and listener of this transport runs on.
    public let eventLoop: any EventLoop
    /// The settings it was started with.
    public let configuration: Configuration

    let logger: Logger
    private let counters = NIOLockedValueBox(Statistics())

    // Everything below is touched on `eventLoop` only.
    var channels: [MDNSAddressFamily: any Channel] = [:]
    let groups: [MDNSAddressFamily: SocketAddress]
    let scanner: MDNSInterfaceScanner
    /// Usable interfaces by index: joined in at least one family.
    var found: [Int: MDNSInterfaceScanner.Found] = [:]
    var joined: [MDNSAddressFamily: Set<Int>] = [.ipv4: [], .ipv6: []]
    package internal(set) var interfaces: [MDNSInterface] = []
    private var listeners: [Int: (MDNSTransportEvent) -> Void] = [:]
    private var nextListenerID = 0
    private var rescanTask: RepeatedTask?
    private var outgoing = CircularBuffer<Outgoing>()
    private var writing = false
    private var draining = false
    var closed = false
    /// The sockets of one-shot queries still listening for replies, closed with the transport.
    private var oneShotChannels: [ObjectIdentifier: any Channel] = [:]

    /// The largest datagram read whole; RFC 6762 §17 caps mDNS messages at 9000 bytes.
    private static let maximumDatagramSize = 9_216
    /// The receive buffer asked for; Linux grants at most twice `net.core.rmem_max`.
    private static let receiveBufferSize = 1 << 20

    /// One datagram waiting for the socket.
    private struct Outgoing {
        var data: ByteBuffer
        var family: MDNSAddressFamily
        var address: SocketAddress
        /// Set for multicast: the interface to send it out of.
        var interfaceIndex: Int?
        var promise: EventLoopPromise<Void>
        /// The socket to send it from, when not the family's port-5353 one.
        var channel: (any Channel)? = nil
    }

    private init(configuration: Configuration, eventLoop: any EventLoop, logger: Logger) {
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.logger = logger
        self.scanner = MDNSInterfaceScanner(filter: configuration.interfaceFilter)
        var groups: [MDNSAddressFamily: SocketAddress] = [:]
        groups[.ipv4] = try? SocketAddress(ipAddress: "224.0.0.251", port: configuration.port)
        groups[.ipv6] = try? SocketAddress(ipAddress: "ff02::fb", port: configuration.port)
        self.groups = groups
    }

    /// Binds the sockets, joins the groups on every usable interface, and starts watching the
    /// interfaces. Fails if the IPv4 socket cannot be bound; an IPv6 socket that cannot be bound
    /// is logged and done without.
    public static func start(
        configuration: Configuration = Configuration(), on eventLoop: any EventLoop,
        logger: Logger = Logger(label: "baton.mdns")
    ) -> EventLoopFuture<MDNSTransport> {
        let transport = MDNSTransport(configuration: configuration, eventLoop: eventLoop, logger: logger)
        // Submitted, so that the sockets are created on the loop's thread (DatagramBootstrap
        // creates them on the calling thread), in its network namespace.
        return eventLoop.flatSubmit { transport.start0() }.map { transport }
    }

    /// Counters since the start; readable from any thread.
    public var statistics: Statistics {
        counters.withLockedValue { $0 }
    }

    /// The interfaces in use now: up, multicast-capable, and joined in at least one family.
    public func interfacesInUse() -> EventLoopFuture<[MDNSInterface]> {
        eventLoop.submit { self.interfaces }
    }

    /// The families whose socket is bound: IPv4, and IPv6 unless unavailable or disabled.
    public var families: EventLoopFuture<Set<MDNSAddressFamily>> {
        eventLoop.submit { Set(self.channels.keys) }
    }

    /// Closes both sockets and stops watching interfaces. Listeners hear nothing more; datagrams
    /// still queued are dropped. Closing again does nothing.
    public func close() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            guard !closed else { return eventLoop.makeSucceededVoidFuture() }
            closed = true
            rescanTask?.cancel()
            rescanTask = nil
            listeners = [:]
            while let item = outgoing.popFirst() {
                item.promise.succeed()
            }
            let closing = (Array(channels.values) + oneShotChannels.values).map { $0.close() }
            channels = [:]
            oneShotChannels = [:]
            return EventLoopFuture.andAllComplete(closing, on: eventLoop)
        }
    }

    // MARK: - MDNSMessageTransport

    @discardableResult
    package func send(_ message: DNSMessage, to destination: MDNSDestination) -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        guard !closed else { return eventLoop.makeSucceededVoidFuture() }
        let data = message.serialized()
        var futures: [EventLoopFuture<Void>] = []
        func enqueue(_ family: MDNSAddressFamily, _ address: SocketAddress, _ interfaceIndex: Int?) {
            let promise = eventLoop.makePromise(of: Void.self)
            outgoing.append(
                Outgoing(
                    data: data, family: family, address: address, interfaceIndex: interfaceIndex, promise: promise))
            futures.append(promise.futureResult)
        }
        switch destination {
        case .multicast(let index, let family):
            for family in family.map({ [$0] }) ?? MDNSAddressFamily.allCases {
                guard joined[family, default: []].contains(index), let group = groups[family] else { continue }
                enqueue(family, group, index)
            }
        case .unicast(let address):
            switch address.protocol {
            case .inet: enqueue(.ipv4, address, nil)
            case .inet6: enqueue(.ipv6, address, nil)
            default: break
            }
        }
        drain()
        return EventLoopFuture.andAllComplete(futures, on: eventLoop)
    }

    @discardableResult
    package func sendOneShotQuery(
        _ message: DNSMessage, listeningFor duration: TimeAmount,
        onResponse: @escaping (MDNSReceivedMessage) -> Void
    ) -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        guard !closed else { return eventLoop.makeSucceededVoidFuture() }
        let data = message.serialized()
        let id = message.id
        // A socket per family in use, bound here on the loop's thread (and so in its network
        // namespace). One that cannot be bound is done without: this query only speeds things up.
        let families = MDNSAddressFamily.allCases.filter { channels[$0] != nil }
        let opening = families.map { family in
            bindOneShot(family) { [weak self] received in
                // A reply echoes the query's ID (§6.7); anything else on this port is not ours.
                guard let self, received.message.isResponse, received.message.id == id else { return }
                if let index = received.interfaceIndex, found[index] == nil { return }
                emitOneShot(received, onResponse)
            }.map { Optional((family, $0)) }.recover { [self] error in
                logger.debug("mDNS: cannot open a one-shot query socket", metadata: ["family": "\(family)", "error": "\(error)"])
                return nil
            }
        }
        return EventLoopFuture.whenAllSucceed(opening, on: eventLoop).flatMap { [self] opened in
            let opened = opened.compactMap { $0 }
            guard !closed else {
                return EventLoopFuture.andAllComplete(opened.map { $0.1.close() }, on: eventLoop)
            }
            for (family, channel) in opened {
                oneShotChannels[ObjectIdentifier(channel)] = channel
                guard let group = groups[family] else { continue }
                for index in joined[family, default: []].sorted() {
                    outgoing.append(
                        Outgoing(
                            data: data, family: family, address: group, interfaceIndex: index,
                            promise: eventLoop.makePromise(), channel: channel))
                }
            }
            drain()
            let done = eventLoop.makePromise(of: Void.self)
            eventLoop.scheduleTask(in: duration) { [self] in
                let closing = opened.map { _, channel in
                    oneShotChannels[ObjectIdentifier(channel)] = nil
                    return channel.close()
                }
                EventLoopFuture.andAllComplete(closing, on: eventLoop).cascade(to: done)
            }
            return done.futureResult
        }
    }

    /// Hands a one-shot query's reply on, unless the transport has closed meanwhile.
    private func emitOneShot(_ received: MDNSReceivedMessage, _ onResponse: (MDNSReceivedMessage) -> Void) {
        count { $0.packetsReceived += 1 }
        guard !closed else { return }
        onResponse(received)
    }

    package func addListener(_ listener: @escaping (MDNSTransportEvent) -> Void) -> MDNSListenerID {
        eventLoop.assertInEventLoop()
        nextListenerID += 1
        listeners[nextListenerID] = listener
        return MDNSListenerID(rawValue: nextListenerID)
    }

    package func removeListener(_ id: MDNSListenerID) {
        eventLoop.assertInEventLoop()
        listeners[id.rawValue] = nil
    }

    // MARK: - Starting

    private func start0() -> EventLoopFuture<Void> {
        bind(.ipv4).flatMap { [self] channel in
            use(channel, for: .ipv4)
            guard configuration.ipv6Enabled else { return eventLoop.makeSucceededVoidFuture() }
            return bind(.ipv6).map { [self] channel in
                use(channel, for: .ipv6)
            }.recover { [self] error in
                logger.info("mDNS: no IPv6, carrying on with IPv4", metadata: ["error": "\(error)"])
            }
        }.map { [self] in
            rescan()
            rescanTask = eventLoop.scheduleRepeatedTask(
                initialDelay: configuration.interfaceRescanInterval, delay: configuration.interfaceRescanInterval
            ) { [self] _ in rescan() }
            logger.debug(
                "mDNS: transport started",
                metadata: ["families": "\(channels.keys.map(\.description).sorted())", "interfaces": "\(interfaces)"])
        }
    }

    /// Takes `channel` as the socket of `family`, and opens another should it close under us:
    /// NIO closes a datagram socket on a send error it holds fatal, such as ENETUNREACH when
    /// the interface goes down as a datagram leaves, which would leave mDNS deaf and mute.
    private func use(_ channel: any Channel, for family: MDNSAddressFamily) {
        channels[family] = channel
        channel.closeFuture.whenComplete { [self] _ in
            guard !closed, let current = channels[family], current === channel else { return }
            channels[family] = nil
            joined[family] = []
            logger.warning("mDNS: socket closed after an error; opening it again", metadata: ["family": "\(family)"])
            reopen(family)
        }
    }

    /// Binds `family`'s socket again and joins the groups on the interfaces in use; tries again
    /// at the next rescan while it cannot.
    private func reopen(_ family: MDNSAddressFamily) {
        guard !closed else { return }
        bind(family).whenComplete { [self] result in
            switch result {
            case .success(let channel):
                guard !closed else {
                    channel.close(promise: nil)
                    return
                }
                use(channel, for: family)
                rescan()
            case .failure(let error):
                logger.warning("mDNS: cannot open the socket again", metadata: ["family": "\(family)", "error": "\(error)"])
                eventLoop.scheduleTask(in: configuration.interfaceRescanInterval) { [self] in reopen(family) }
            }
        }
    }

    private func bind(_ family: MDNSAddressFamily) -> EventLoopFuture<any Channel> {
        let reusePort = ChannelOptions.Types.SocketOption(
            level: .socket, name: NIOBSDSocket.Option(rawValue: SO_REUSEPORT))
        var bootstrap = DatagramBootstrap(group: eventLoop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(reusePort, value: 1)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.maximumDatagramSize))
            // Every responder on the link answers a query within the same 100 ms, and every
            // mDNS socket on the host gets every answer: room for bursts, read in batches.
            .channelOption(.socketOption(.so_rcvbuf), value: Self.receiveBufferSize)
            .channelOption(.maxMessagesPerRead, value: 16)
        if family == .ipv6 {
            // Otherwise the IPv6 socket would receive IPv4 datagrams too, mapped, and every
            // IPv4 packet would arrive twice.
            bootstrap = bootstrap.channelOption(
                ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
        }
        bootstrap = bootstrap.channelInitializer { [self] channel in
            channel.eventLoop.makeCompletedFuture {
                let handler = MDNSReceiveHandler(
                    family: family, logger: logger,
                    onMessage: { [weak self] message in self?.received(message) },
                    onMalformed: { [weak self] in self?.count { $0.packetsReceived += 1; $0.malformedPackets += 1 } })
                try channel.pipeline.syncOperations.addHandler(handler)
            }
        }
        return bind(bootstrap, family: family, port: configuration.port)
    }

    /// Binds `bootstrap` to `family`'s wildcard address on `port`, then turns on packet info and
    /// sets the hop limits; a channel that cannot take them is closed again.
    private func bind(_ bootstrap: DatagramBootstrap, family: MDNSAddressFamily, port: Int) -> EventLoopFuture<any Channel> {
        let address: SocketAddress
        do {
            // Parsed, not resolved: getaddrinfo would refuse "::" on a host without a global IPv6
            // address (AI_ADDRCONFIG), yet link-local IPv6 is all mDNS needs.
            address = try SocketAddress(ipAddress: family == .ipv4 ? "0.0.0.0" : "::", port: port)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return bootstrap.bind(to: address).flatMap { channel in
            // Packet info needs a bound socket: the option is chosen by its address family.
            channel.setOption(.receivePacketInfo, value: true).flatMap {
                Self.setHopLimits(on: channel, family: family)
            }.flatMapError { error in
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }.map { channel }
        }
    }

    /// A socket of `family` on an ephemeral port, for one one-shot query and its replies: no
    /// SO_REUSEPORT, as the replies are for us alone, and not joined to the group.
    private func bindOneShot(
        _ family: MDNSAddressFamily, onMessage: @escaping (MDNSReceivedMessage) -> Void
    ) -> EventLoopFuture<any Channel> {
        var bootstrap = DatagramBootstrap(group: eventLoop)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.maximumDatagramSize))
        if family == .ipv6 {
            bootstrap = bootstrap.channelOption(
                ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
        }
        // The initializer runs on this loop, the channel's.
        let onMessage = NIOLoopBound(onMessage, eventLoop: eventLoop)
        bootstrap = bootstrap.channelInitializer { [self] channel in
            channel.eventLoop.makeCompletedFuture {
                let handler = MDNSReceiveHandler(
                    family: family, logger: logger, onMessage: onMessage.value,
                    onMalformed: { [weak self] in self?.count { $0.packetsReceived += 1; $0.malformedPackets += 1 } })
                try channel.pipeline.syncOperations.addHandler(handler)
            }
        }
        return bind(bootstrap, family: family, port: 0)
    }

    /// TTL / hop limit 255 for multicast and unicast (RFC 6762 §11), multicast loopback on.
    private static func setHopLimits(on channel: any Channel, family: MDNSAddressFamily) -> EventLoopFuture<Void> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        switch family {
        case .ipv4:
            return provider.setIPMulticastTTL(255).flatMap {
                provider.setIPMulticastLoop(1)
            }.flatMap {
                provider.unsafeSetSocketOption(level: .ip, name: NIOBSDSocket.Option(rawValue: IP_TTL), value: CInt(255))
            }
        case .ipv6:
            return provider.setIPv6MulticastHops(255).flatMap {
                provider.setIPv6MulticastLoop(1)
            }.flatMap {
                provider.unsafeSetSocketOption(
                    level: .ipv6, name: NIOBSDSocket.Option(rawValue: IPV6_UNICAST_HOPS), value: CInt(255))
            }
        }
    }

    // MARK: - Receiving

    private func received(_ message: MDNSReceivedMessage) {
        count { $0.packetsReceived += 1 }
        // Another process may have joined the group on an interface we leave alone, and Linux
        // then hands us its multicast too (IP_MULTICAST_ALL).
        if message.wasMulticast, let index = message.interfaceIndex, found[index] == nil { return }
        emit(.message(message))
    }

    func emit(_ event: MDNSTransportEvent) {
        for (_, listener) in listeners.sorted(by: { $0.key < $1.key }) {
            listener(event)
        }
    }

    private func count(_ update: (inout Statistics) -> Void) {
        counters.withLockedValue(update)
    }

    // MARK: - Sending

    /// Writes queued datagrams one at a time: the multicast interface is a socket option, so it
    /// may only change once the previous datagram has left.
    private func drain() {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while !writing, let item = outgoing.popFirst() {
            guard let channel = item.channel ?? channels[item.family] else {
                item.promise.succeed()
                continue
            }
            writing = true
            selectInterface(item.interfaceIndex, family: item.family, on: channel).flatMap {
                channel.writeAndFlush(AddressedEnvelope(remoteAddress: item.address, data: item.data))
            }.whenComplete { [self] result in
                switch result {
                case .success:
                    count { $0.packetsSent += 1 }
                case .failure(let error):
                    count { $0.sendFailures += 1 }
                    logger.debug(
                        "mDNS: send failed",
                        metadata: ["to": "\(item.address)", "interface": "\(item.interfaceIndex ?? 0)", "error": "\(error)"])
                }
                item.promise.succeed()
                writing = false
                // Completions usually come while the loop above is still running, which then
                // carries on; a write that had to wait restarts it.
                if !draining { drain() }
            }
        }
    }

    private func selectInterface(
        _ index: Int?, family: MDNSAddressFamily, on channel: any Channel
    ) -> EventLoopFuture<Void> {
        guard let index, let provider = channel as? any SocketOptionProvider else {
            return eventLoop.makeSucceededVoidFuture()
        }
        switch family {
        case .ipv4:
            #if os(Linux)
            // By index: an address could belong to two interfaces, or change under us.
            var request = ip_mreqn()
            request.imr_ifindex = CInt(index)
            return provider.unsafeSetSocketOption(level: .ip, name: .ip_multicast_if, value: request)
            #else
            guard let address = found[index]?.interface.ipv4Addresses.first else {
                return eventLoop.makeSucceededVoidFuture()
            }
            var raw = in_addr()
            withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: address) }
            return provider.setIPMulticastIF(raw)
            #endif
        case .ipv6:
            return provider.setIPv6MulticastIF(CUnsignedInt(index))
        }
    }
}
