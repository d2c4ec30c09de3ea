import BatonCore
import BatonDiscovery
import NIOCore

extension DeviceDirectory {
    /// The source name mDNS enumerates under.
    static let mdnsSource = "mdns"

    /// Opens the mDNS sockets on the client's loop and browses `_baton._tcp`. Sockets that
    /// cannot be opened are reported as an `error` event, and enumeration goes on without mDNS.
    func startMDNS(_ configuration: MDNSTransport.Configuration) {
        MDNSTransport.start(configuration: configuration, on: eventLoop, logger: logger).whenComplete { [self] result in
            switch result {
            case .success(let transport):
                guard started else {
                    _ = transport.close()
                    return
                }
                mdnsTransport = transport
                let browser = MDNSBrowser(transport: transport, timing: options.mdnsTiming, logger: logger) { [self] event in
                    eventLoop.assertInEventLoop()
                    handle(event)
                }
                mdnsBrowser = browser
                browser.start()
            case .failure(let error):
                logger.error("mDNS unavailable", metadata: ["error": "\(error)"])
                report("mDNS cannot be used: \(error)")
                sourceEnumerated(Self.mdnsSource)
            }
        }
    }

    func stopMDNS() -> EventLoopFuture<Void> {
        let browser = mdnsBrowser
        let transport = mdnsTransport
        mdnsBrowser = nil
        mdnsTransport = nil
        guard let browser, let transport else { return eventLoop.makeSucceededVoidFuture() }
        return browser.stop().flatMap { transport.close() }
    }

    private func handle(_ event: MDNSBrowser.Event) {
        switch event {
        case .added(let service), .updated(let service):
            guard let device = DeviceAdvertisement.device(from: service) else {
                // Some other software's `_baton._tcp` instance, or an agent whose TXT is not in.
                logger.debug("mDNS instance without a device id", metadata: ["instance": "\(service.instanceName)"])
                mdnsWithdrawn(instance: service.instanceName)
                return
            }
            mdnsAdvertised(instance: service.instanceName, device: device)
        case .removed(let instance, let reason):
            logger.debug("mDNS instance gone", metadata: ["instance": "\(instance)", "reason": "\(reason)"])
            mdnsWithdrawn(instance: instance)
        case .enumerationCompleted:
            sourceEnumerated(Self.mdnsSource)
        }
    }
}
