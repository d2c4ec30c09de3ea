import BatonClient
import BatonCore
import BatonNet
import NIOCore
import NIOPosix

/// `baton account revoke` passes the new revocation list on at once: it looks for the
/// account's devices (mDNS and --peer) for a short while and meets each with Describe; the
/// Hello of that connection carries the list, and an agent takes a newer one and drops the
/// revoked device's connections before it answers. Agents not reached learn the list when a
/// device of the account that holds it next connects to them.
enum RevocationPush {
    /// A device met (the list reached it), or not (and why).
    struct Result {
        var device: RemoteDevice
        var failure: String?
    }

    /// Pushes the list in this device's folder to the devices of its account that `discovery`
    /// finds within `within` (not those in `ids`: this device, the revoked one), each within
    /// `within` again; the results, and what discovery could not look at (a --peer that did
    /// not answer). `client` connects as this device; its trust store already holds the new list.
    static func push(
        with client: BatonClient, discovery: DiscoveryOptions, within: TimeAmount, skipping ids: Set<String>
    ) throws -> (results: [Result], problems: [String]) {
        let loop = client.eventLoop
        let directory = try discovery.makeDirectory(client: client)
        let looked = loop.makePromise(of: [String].self)
        try loop.submit {
            let problems = NIOLoopBoundBox([String](), eventLoop: loop)
            directory.start()
            _ = directory.watch(DeviceFilter()) { event in
                if case .error(let problem) = event { problems.value.append(problem) }
                if case .enumerationCompleted = event { looked.succeed(problems.value) }
            }
            loop.scheduleTask(in: within) { looked.succeed(problems.value) }
        }.wait()
        let problems = try looked.futureResult.wait()
        let devices = try loop.submit { directory.devices(matching: DeviceFilter()) }.wait()
            .filter { !ids.contains($0.info.id.lowercased()) }
        let met = try loop.submit { () -> EventLoopFuture<[Result]> in
            let meetings = devices.map { device in
                client.describe(directory.target(for: device), timeout: within)
                    .map { _ in Result(device: device, failure: nil) }
                    .recover { error in Result(device: device, failure: "\(error)") }
            }
            return EventLoopFuture.whenAllSucceed(meetings, on: loop)
        }.wait().wait()
        try loop.submit { directory.stop() }.wait().wait()
        return (met.sorted { $0.device.info.name < $1.device.info.name }, problems)
    }

    /// A client on a loop of its own, as this device (its folder, read now, holds the new list).
    static func makeClient(connectTimeout: TimeAmount, _ logging: LoggingOptions) -> BatonClient {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var options = BatonClient.Options()
        options.connectTimeout = connectTimeout
        options.security = AccountCommand.attempt(logging) { try ConnectionSecurity.forCommandLine(insecure: false) }
        return BatonClient(eventLoop: group.next(), options: options)
    }

    /// `Living Room TV (id) at 192.168.1.20:47300`.
    static func describe(_ device: RemoteDevice) -> String {
        let at = device.endpoints.first.map { " at \($0.host.contains(":") ? "[\($0.host)]" : $0.host):\($0.port)" } ?? ""
        return "\(device.info.name) (\(device.info.id))\(at)"
    }
}
