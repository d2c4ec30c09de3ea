import BatonBroker
import BatonClient
import BatonLua
import BatonNet
import BatonSecurity
import Dispatch
import Foundation
import Logging
import NIOCore

/// The broker this process reaches devices through (``BrokerOptions/resolve(_:)`` sets it):
/// the clients and directories the commands make take its dialer and its presence source, and
/// its connections say DISCONNECT before the process ends. One per process, as the options are.
enum CommandBroker {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var current: BrokerAccess?

    /// The broker's access, if a broker is in use.
    static var access: BrokerAccess? { lock.withLock { current } }

    /// Uses `effective`'s broker (none: nil) as this device's account, loaded when first needed.
    static func use(_ effective: EffectiveBroker) {
        let access = effective.settings.map { settings in
            BrokerAccess(settings: settings, logger: Logger(label: "baton.broker")) {
                try ConnectionSecurity.forCommandLine(insecure: false).trustStore
            }
        }
        lock.withLock { current = access }
    }

    /// `options` with the broker's dialer for a client on `loop`, unless plaintext.
    static func dialing(_ options: inout BatonClient.Options, on loop: any EventLoop) {
        guard let access, options.security.trustStore != nil else { return }
        options.dialers = access.dialers(on: loop)
    }

    /// `options` with the broker's presence as a source, for a client of this account.
    static func discovering(_ options: inout DeviceDirectory.Options, client: BatonClient) {
        guard let access, client.options.security.trustStore != nil else { return }
        options.moreSources = { access.sources(for: $0) }
    }

    /// A script's device access through the broker too, unless `insecure`.
    static func reaching(_ network: inout DeviceAccess.Options, insecure: Bool) {
        guard let access, !insecure else { return }
        network.dialers = { access.dialers(on: $0) }
        network.discovery.moreSources = { access.sources(for: $0) }
    }

    /// Says DISCONNECT on every broker connection made, waiting a second at most.
    static func finish() {
        guard let stopping = access?.stop() else { return }
        let done = DispatchSemaphore(value: 0)
        stopping.whenComplete { _ in done.signal() }
        _ = done.wait(timeout: .now() + 1)
    }
}
