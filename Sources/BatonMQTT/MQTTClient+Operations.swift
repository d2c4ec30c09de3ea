import NIOCore

extension MQTTClient {
    func publishOnLoop(_ message: MQTTMessage) -> EventLoopFuture<MQTTPubAck> {
        guard !machine.stopped else {
            return eventLoop.makeFailedFuture(MQTTError(.stopped, "the MQTT client is stopped"))
        }
        guard !message.topic.isEmpty, message.topic.utf8.count <= 65_535,
              !message.topic.contains(where: { $0 == "+" || $0 == "#" })
        else {
            return eventLoop.makeFailedFuture(MQTTError(.protocolError, "\"\(message.topic)\" is not a topic to publish to"))
        }
        if message.qos == .atMostOnce {
            guard connected else {
                return eventLoop.makeFailedFuture(MQTTError(.notConnected, "not connected to the broker (QoS 0 is not queued)"))
            }
            let promise = eventLoop.makePromise(of: Void.self)
            if let error = tooLarge(message) { return eventLoop.makeFailedFuture(error) }
            send(.publish(MQTTPacket.Publish(message: message, packetID: nil)), promise: promise)
            return promise.futureResult.map { MQTTPubAck(reasonCode: 0) }
        }
        if let error = tooLarge(message) { return eventLoop.makeFailedFuture(error) }
        guard queue.count < configuration.maximumQueuedPublishes else {
            return eventLoop.makeFailedFuture(MQTTError(
                .queueFull, "\(queue.count) QoS 1 publishes already wait for the broker (the most allowed)"))
        }
        let promise = eventLoop.makePromise(of: MQTTPubAck.self)
        nextSequence += 1
        queue.append(PendingPublish(message: message, promise: promise, sequence: nextSequence))
        drainQueue()
        return promise.futureResult
    }

    private func tooLarge(_ message: MQTTMessage) -> MQTTError? {
        // Topic, id and properties stay well under 1 KiB in practice; the bound is approximate.
        let size = message.payload.readableBytes + message.topic.utf8.count + 16 + message.properties.wire.encodedLength
        guard size > brokerMaximumPacketSize else { return nil }
        return MQTTError(.packetTooLarge, "a publish of \(size) bytes is over the broker's maximum of \(brokerMaximumPacketSize)")
    }

    /// Sends queued QoS 1 publishes while the broker's Receive Maximum allows.
    func drainQueue() {
        while connected, inflight.count < sendQuota, var pending = queue.popFirst() {
            let dup = pending.packetID != nil
            let id = pending.packetID ?? allocatePacketID()
            pending.packetID = id
            inflight[id] = pending
            send(.publish(MQTTPacket.Publish(message: pending.message, packetID: id, dup: dup)))
        }
    }

    func pubackReceived(_ ack: MQTTPacket.PubAck) {
        guard let pending = inflight.removeValue(forKey: ack.packetID) else {
            logger.debug("PUBACK for packet id \(ack.packetID), which is not in flight")
            return
        }
        var reasonString: String?
        if case .string(let text)? = ack.properties[MQTTProperties.reasonString] { reasonString = text }
        pending.promise.succeed(MQTTPubAck(reasonCode: ack.reasonCode, reasonString: reasonString))
        drainQueue()
    }

    /// Unacknowledged publishes go out again after the reconnect, first and in their order,
    /// under the ids they had (``keepPacketIDs(sessionPresent:)`` decides at CONNACK).
    func requeueInflight() {
        for pending in inflight.values.sorted(by: { $0.sequence > $1.sequence }) {
            queue.prepend(pending)
        }
        inflight = [:]
    }

    /// At CONNACK: with the session the broker kept, a publish it did not acknowledge is sent
    /// again with DUP under its old id, so the broker knows it for the same one; with a new
    /// session the old ids mean nothing, and a publish is new (the broker link drops copies).
    func keepPacketIDs(sessionPresent: Bool) {
        guard !sessionPresent else { return }
        for index in queue.indices { queue[index].packetID = nil }
    }

    func allocatePacketID() -> UInt16 {
        repeat {
            nextPacketID = nextPacketID == UInt16.max ? 1 : nextPacketID + 1
        } while inflight[nextPacketID] != nil || subscribing[nextPacketID] != nil || unsubscribing[nextPacketID] != nil
            // Publishes waiting to go again keep their ids; they are the queue's head.
            || queue.prefix(while: { $0.packetID != nil }).contains { $0.packetID == nextPacketID }
        return nextPacketID
    }

    func subscribeOnLoop(_ new: [MQTTSubscription]) -> EventLoopFuture<[UInt8]> {
        guard !machine.stopped else {
            return eventLoop.makeFailedFuture(MQTTError(.stopped, "the MQTT client is stopped"))
        }
        guard !new.isEmpty else { return eventLoop.makeSucceededFuture([]) }
        for subscription in new {
            if let index = subscriptions.firstIndex(where: { $0.filter == subscription.filter }) {
                subscriptions[index] = subscription
            } else {
                subscriptions.append(subscription)
            }
        }
        let waiter = SubscribeWaiter(filters: new.map(\.filter), promise: eventLoop.makePromise())
        if connected {
            let id = allocatePacketID()
            subscribing[id] = SubscribeRequest(sent: waiter.filters, waiters: [waiter])
            send(.subscribe(MQTTPacket.Subscribe(packetID: id, subscriptions: new)))
        } else {
            waitingSubscribers.append(waiter)
        }
        return waiter.promise.futureResult
    }

    /// After CONNACK: one SUBSCRIBE for everything; requests made meanwhile are answered by it.
    func resubscribe() {
        guard !subscriptions.isEmpty else {
            for waiter in waitingSubscribers { waiter.promise.succeed([]) }
            waitingSubscribers = []
            return
        }
        let id = allocatePacketID()
        subscribing[id] = SubscribeRequest(sent: subscriptions.map(\.filter), waiters: waitingSubscribers)
        waitingSubscribers = []
        send(.subscribe(MQTTPacket.Subscribe(packetID: id, subscriptions: subscriptions)))
    }

    func subackReceived(_ ack: MQTTPacket.SubAck) {
        guard let request = subscribing.removeValue(forKey: ack.packetID) else { return }
        // The SUBACK answers the SUBSCRIBE's filters in order.
        var codes: [String: UInt8] = [:]
        for (filter, code) in zip(request.sent, ack.reasonCodes) { codes[filter] = code }
        for (filter, code) in codes where code >= 0x80 {
            logger.warning("the broker refused the subscription to \(filter): \(MQTTReasonCode.describe(code))")
        }
        for waiter in request.waiters { waiter.promise.succeed(waiter.filters.map { codes[$0] ?? 0x80 }) }
    }

    func unsubscribeOnLoop(_ filters: [String]) -> EventLoopFuture<Void> {
        guard !machine.stopped else {
            return eventLoop.makeFailedFuture(MQTTError(.stopped, "the MQTT client is stopped"))
        }
        subscriptions.removeAll { filters.contains($0.filter) }
        guard connected, !filters.isEmpty else { return eventLoop.makeSucceededVoidFuture() }
        let id = allocatePacketID()
        let promise = eventLoop.makePromise(of: Void.self)
        unsubscribing[id] = promise
        send(.unsubscribe(MQTTPacket.Unsubscribe(packetID: id, filters: filters)))
        return promise.futureResult
    }

    func stopOnLoop(disconnectWithWill: Bool) -> EventLoopFuture<Void> {
        guard !machine.stopped else { return eventLoop.makeSucceededVoidFuture() }
        machine.stop()
        reconnectTask?.cancel()
        reconnectTask = nil
        let stopped = MQTTError(.stopped, "the MQTT client stopped")
        let channel = self.channel
        let wasConnected = connected
        let written = eventLoop.makePromise(of: Void.self)
        if wasConnected {
            let code = disconnectWithWill ? MQTTReasonCode.disconnectWithWill : 0
            send(.disconnect(MQTTPacket.Disconnect(reasonCode: code)), promise: written)
        } else {
            written.succeed()
        }
        self.channel = nil
        tearDownConnection()
        requeueInflight()
        while let pending = queue.popFirst() { pending.promise.fail(stopped) }
        for waiter in waitingSubscribers + subscribing.values.flatMap(\.waiters) { waiter.promise.fail(stopped) }
        waitingSubscribers = []
        subscribing = [:]
        for promise in unsubscribing.values { promise.fail(stopped) }
        unsubscribing = [:]
        if wasConnected { delegate?.mqttClient(self, disconnected: "stopped") }
        guard let channel else { return eventLoop.makeSucceededVoidFuture() }
        // Close once DISCONNECT is written, so the broker reads it before the end.
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        return channel.closeFuture
    }
}

extension MQTTClient {
    /// Ends the connection as a crash would: no DISCONNECT (so the broker publishes the
    /// will) and no reconnect. Queued work fails as on `stop`. For tests.
    package func abandonConnectionForTesting() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            let channel = self.channel
            self.channel = nil
            self.connected = false
            _ = self.stopOnLoop(disconnectWithWill: false)
            guard let channel else { return self.eventLoop.makeSucceededVoidFuture() }
            channel.close(promise: nil)
            return channel.closeFuture
        }
    }
}
