import Logging
import NIOCore
import NIOPosix
import NIOSSL

extension MQTTClient {
    /// Dials the broker; CONNECT goes out as soon as the socket is up (NIOSSL holds it until
    /// the handshake is done). One deadline covers TCP, TLS and CONNACK.
    func connect() {
        eventLoop.assertInEventLoop()
        generation += 1
        let generation = self.generation
        let configuration = self.configuration
        let context: NIOSSLContext?
        do {
            context = try tlsContext()
        } catch {
            logger.error("cannot use the TLS configuration: \(error)")
            scheduleReconnect(after: machine.lost(.refused, now: .now()))
            return
        }
        let serverHostname = configuration.tlsServerHostname
            ?? ((try? SocketAddress(ipAddress: configuration.host, port: 0)) == nil ? configuration.host : nil)
        let maximumPacketSize = Int(configuration.maximumPacketSize)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(configuration.connectTimeout)
            .channelInitializer { channel in
                do {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: context, serverHostname: serverHostname))
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        MQTTConnectionHandler(client: self, generation: generation, maximumPacketSize: maximumPacketSize))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        connectTimeoutTask = eventLoop.scheduleTask(in: configuration.connectTimeout) {
            self.connectionLost(generation: generation,
                                reason: "no CONNACK within \(configuration.connectTimeout.nanoseconds / 1_000_000) ms",
                                loss: .transient)
        }
        logger.debug("connecting to \(configuration.host):\(configuration.port)")
        bootstrap.connect(host: configuration.host, port: configuration.port).whenComplete { result in
            switch result {
            case .success(let channel):
                guard generation == self.generation, !self.machine.stopped else {
                    channel.close(promise: nil)
                    return
                }
                self.channel = channel
                self.send(.connect(self.connectPacket()))
            case .failure(let error):
                self.connectionLost(generation: generation,
                                    reason: "cannot connect to \(configuration.host):\(configuration.port): \(error)",
                                    loss: .transient)
            }
        }
    }

    private func tlsContext() throws -> NIOSSLContext? {
        guard let tls = configuration.tls else { return nil }
        if let sslContext { return sslContext }
        let context = try NIOSSLContext(configuration: tls)
        sslContext = context
        return context
    }

    private func connectPacket() -> MQTTPacket.Connect {
        var properties = MQTTProperties()
        if configuration.sessionExpiryInterval > 0 {
            properties.append(MQTTProperties.sessionExpiryInterval, .fourByte(configuration.sessionExpiryInterval))
        }
        properties.append(MQTTProperties.maximumPacketSize, .fourByte(configuration.maximumPacketSize))
        properties.append(MQTTProperties.topicAliasMaximum, .twoByte(0))
        return MQTTPacket.Connect(
            clientID: configuration.clientID, keepAlive: configuration.keepAlive,
            cleanStart: configuration.cleanStart, username: configuration.username,
            password: configuration.password, will: configuration.will, properties: properties)
    }

    /// Writes a packet on the current connection; false when there is none.
    @discardableResult
    func send(_ packet: MQTTPacket, promise: EventLoopPromise<Void>? = nil) -> Bool {
        guard let channel else {
            promise?.fail(MQTTError(.notConnected, "not connected to the broker"))
            return false
        }
        channel.writeAndFlush(packet.encoded(allocator: channel.allocator), promise: promise)
        return true
    }

    /// Every packet of the current connection, in order, on the loop.
    func received(_ packet: MQTTPacket, generation: Int) {
        guard generation == self.generation, channel != nil else { return }
        switch packet {
        case .connack(let ack):
            connackReceived(ack, generation: generation)
        case .publish(let publish) where connected:
            delegate?.mqttClient(self, received: publish.message)
            // The delegate has it: only now may the broker forget it.
            if let id = publish.packetID, generation == self.generation {
                send(.puback(MQTTPacket.PubAck(packetID: id)))
            }
        case .puback(let ack) where connected:
            pubackReceived(ack)
        case .suback(let ack) where connected:
            subackReceived(ack)
        case .unsuback(let ack) where connected:
            unsubscribing.removeValue(forKey: ack.packetID)?.succeed()
        case .pingresp where connected:
            pingDeadlineTask?.cancel()
            pingDeadlineTask = nil
        case .disconnect(let disconnect):
            var reason = "the broker sent DISCONNECT \(MQTTReasonCode.describe(disconnect.reasonCode))"
            if case .string(let text)? = disconnect.properties[MQTTProperties.reasonString] { reason += ": \(text)" }
            let loss: MQTTReconnectStateMachine.Loss =
                disconnect.reasonCode == MQTTReasonCode.sessionTakenOver ? .takenOver : .transient
            connectionLost(generation: generation, reason: reason, loss: loss)
        default:
            connectionLost(generation: generation, reason: "protocol error: unexpected \(packet.name) from the broker",
                           loss: .transient)
        }
    }

    private func connackReceived(_ ack: MQTTPacket.ConnAck, generation: Int) {
        guard !connected else {
            connectionLost(generation: generation, reason: "protocol error: a second CONNACK", loss: .transient)
            return
        }
        guard ack.reasonCode < 0x80 else {
            var reason = "the broker refused the connection: \(MQTTReasonCode.describe(ack.reasonCode))"
            if case .string(let text)? = ack.properties[MQTTProperties.reasonString] { reason += ": \(text)" }
            let lasting = MQTTReasonCode.isLasting(ack.reasonCode)
            logger.error("\(reason)\(lasting ? "; retrying only every \(configuration.reconnectBackoffCap.nanoseconds / 1_000_000_000) s" : "")")
            connectionLost(generation: generation, reason: reason, loss: lasting ? .refused : .transient)
            return
        }
        connectTimeoutTask?.cancel()
        connectTimeoutTask = nil
        connected = true
        machine.connected()
        sendQuota = 65_535
        if case .twoByte(let v)? = ack.properties[MQTTProperties.receiveMaximum], v > 0 { sendQuota = Int(v) }
        brokerMaximumPacketSize = Int(UInt32.max)
        if case .fourByte(let v)? = ack.properties[MQTTProperties.maximumPacketSize] { brokerMaximumPacketSize = Int(v) }
        var keepAlive = configuration.keepAlive
        if case .twoByte(let v)? = ack.properties[MQTTProperties.serverKeepAlive] { keepAlive = v }
        startKeepAlive(seconds: keepAlive, generation: generation)
        logger.debug("connected to \(configuration.host):\(configuration.port)", metadata: ["session-present": "\(ack.sessionPresent)"])
        keepPacketIDs(sessionPresent: ack.sessionPresent)
        delegate?.mqttClient(self, connectedWithSessionPresent: ack.sessionPresent)
        guard generation == self.generation, connected else { return }
        resubscribe()
        drainQueue()
    }

    private func startKeepAlive(seconds: UInt16, generation: Int) {
        guard seconds > 0 else { return }
        let pingTimeout = configuration.pingTimeout
        keepAliveTask = eventLoop.scheduleRepeatedTask(initialDelay: .seconds(Int64(seconds)), delay: .seconds(Int64(seconds))) { _ in
            guard generation == self.generation, self.connected, self.pingDeadlineTask == nil else { return }
            self.send(.pingreq)
            self.pingDeadlineTask = self.eventLoop.scheduleTask(in: pingTimeout) {
                self.connectionLost(generation: generation,
                                    reason: "no PINGRESP within \(pingTimeout.nanoseconds / 1_000_000) ms: the broker is gone",
                                    loss: .transient)
            }
        }
    }

    /// Ends the current connection (if `generation` is still it), puts unacknowledged
    /// publishes back in front of the queue, and schedules the reconnect.
    func connectionLost(generation: Int, reason: String, loss: MQTTReconnectStateMachine.Loss) {
        guard generation == self.generation, !machine.stopped, reconnectTask == nil else { return }
        let wasConnected = connected
        tearDownConnection()
        requeueInflight()
        // Subscribe requests in flight are answered by the re-subscribe after reconnect.
        for request in subscribing.values { waitingSubscribers += request.waiters }
        subscribing = [:]
        for promise in unsubscribing.values { promise.succeed() }
        unsubscribing = [:]
        if wasConnected {
            logger.warning("connection lost: \(reason)")
            delegate?.mqttClient(self, disconnected: reason)
        } else {
            logger.info("connection failed: \(reason)")
        }
        // The delegate may have stopped the client.
        guard !machine.stopped, reconnectTask == nil else { return }
        // Only an established session can be taken over.
        let action = machine.lost(loss == .closedByBroker && !wasConnected ? .transient : loss, now: .now())
        if case .reconnect(_, true) = action {
            logger.error("another process uses client id \(configuration.clientID) (two agents for one device?): the broker ended this session \(MQTTReconnectStateMachine.takeoversForLoop) times within a minute (DISCONNECT 0x8E, or a close without DISCONNECT as mosquitto 2.0.11 does on a takeover); reconnecting only every \(configuration.reconnectBackoffCap.nanoseconds / 1_000_000_000) s")
        }
        scheduleReconnect(after: action)
    }

    private func scheduleReconnect(after action: MQTTReconnectStateMachine.Action) {
        guard case .reconnect(let delay, _) = action else { return }
        logger.debug("reconnecting in \(delay.nanoseconds / 1_000_000) ms")
        reconnectTask = eventLoop.scheduleTask(in: delay) {
            self.reconnectTask = nil
            guard !self.machine.stopped else { return }
            self.connect()
        }
    }

    /// Cancels the connection's timers and closes its channel; counts it as gone.
    func tearDownConnection() {
        generation += 1
        connected = false
        connectTimeoutTask?.cancel()
        connectTimeoutTask = nil
        keepAliveTask?.cancel()
        keepAliveTask = nil
        pingDeadlineTask?.cancel()
        pingDeadlineTask = nil
        channel?.close(promise: nil)
        channel = nil
    }
}

extension MQTTPacket {
    var name: String {
        switch self {
        case .connect: "CONNECT"
        case .connack: "CONNACK"
        case .publish: "PUBLISH"
        case .puback: "PUBACK"
        case .subscribe: "SUBSCRIBE"
        case .suback: "SUBACK"
        case .unsubscribe: "UNSUBSCRIBE"
        case .unsuback: "UNSUBACK"
        case .pingreq: "PINGREQ"
        case .pingresp: "PINGRESP"
        case .disconnect: "DISCONNECT"
        }
    }
}
