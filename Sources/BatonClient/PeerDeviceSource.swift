import BatonCore
import NIOCore

/// The device at one `host:port` given by hand, for networks without multicast: asked to
/// describe itself at once and every `liveness / 3` after. A device that answers is seen
/// (`available`); one that stops answering stays, `unavailable`. The first failure is reported
/// as a problem.
public final class PeerDeviceSource: DeviceSource, @unchecked Sendable {
    public let name: String
    private let address: DeviceAddress
    private let eventLoop: any EventLoop
    private let liveness: TimeAmount
    /// This device's account: a peer proves it in the handshake.
    private let account: String
    private let describe: (DeviceAddress) -> EventLoopFuture<DeviceInfo>
    private weak var directory: (any DeviceSourceDelegate)?
    private var task: RepeatedTask?
    private var last: RemoteDevice?
    private var polling = false

    /// A source for the agent at `address`, asked with `describe` (which fails when it does
    /// not answer); `account` is the account it proves to be of.
    public init(
        _ address: DeviceAddress, on eventLoop: any EventLoop, liveness: TimeAmount, account: String,
        describe: @escaping (DeviceAddress) -> EventLoopFuture<DeviceInfo>
    ) {
        self.address = address
        self.name = "peer \(address)"
        self.eventLoop = eventLoop
        self.liveness = liveness
        self.account = account
        self.describe = describe
    }

    public func start(reportingTo directory: any DeviceSourceDelegate) {
        eventLoop.preconditionInEventLoop()
        self.directory = directory
        poll(first: true)
        let interval = TimeAmount.nanoseconds(max(liveness.nanoseconds / 3, 100_000_000))
        task = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] _ in
            self?.poll(first: false)
        }
    }

    public func stop() -> EventLoopFuture<Void> {
        task?.cancel()
        task = nil
        directory = nil
        return eventLoop.makeSucceededVoidFuture()
    }

    private func poll(first: Bool) {
        // One check at a time: each has a deadline of its own (the directory gives it).
        guard !polling else { return }
        polling = true
        describe(address).whenComplete { [self] result in
            polling = false
            switch result {
            case .success(let info):
                var device = RemoteDevice(info: info, endpoints: [address], account: account, sources: [.peer])
                device.status = .available
                if device != last {
                    // The device behind the address changed: the old one is no longer seen here.
                    if let last, last.info.id != info.id { directory?.source(self, lost: name) }
                    last = device
                    directory?.source(self, sees: device, as: name)
                }
            case .failure(let error):
                if first { directory?.source(self, problem: "peer \(address) cannot be reached: \(error)") }
                if var device = last, device.status != .unavailable {
                    device.status = .unavailable
                    last = device
                    directory?.source(self, sees: device, as: name)
                }
            }
            if first { directory?.sourceEnumerated(self) }
        }
    }
}
