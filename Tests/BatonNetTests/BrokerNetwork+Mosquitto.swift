import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Brokers in the hub, and the tests' own MQTT 5 clients (`mosquitto_pub`, `mosquitto_sub`).
///
/// mosquitto runs as root here, so it drops to the `mosquitto` user (unless its configuration
/// says `user root`) before it reads certificates, keys, ACL and password files and writes its
/// persistence file: each instance's directory (`@DIR@`) belongs to that user, and a key or ACL
/// the test writes must be handed over with ``handToMosquitto(_:mode:)`` (or be world-readable).
/// The configuration file itself is read as root. mosquitto logs to stderr (its default),
/// which is the instance's log file.
extension BrokerNetwork {
    /// Starts `mosquitto -c FILE` in the hub with `config`, in which `@PORT@` is `port` (a fresh
    /// one unless given), `@HOST@` ``brokerHost`` and `@DIR@` the instance's own directory;
    /// returns once the port accepts. `clientTLS` says how the tests' clients reach it (nil:
    /// plain TCP). Throws with mosquitto's log if it does not start.
    func startMosquitto(
        config: String, name: String = "home", port: Int? = nil, clientTLS: MQTTClientTLS? = nil
    ) async throws -> MosquittoInstance {
        let port = port ?? freshPort()
        let instanceDirectory = directory.file("mosquitto-\(name)-\(port)")
        try FileManager.default.createDirectory(atPath: instanceDirectory, withIntermediateDirectories: true)
        try Self.handToMosquitto(instanceDirectory, mode: 0o700)
        let text = config.replacingOccurrences(of: "@PORT@", with: String(port))
            .replacingOccurrences(of: "@HOST@", with: Self.brokerHost)
            .replacingOccurrences(of: "@DIR@", with: instanceDirectory)
        let file = instanceDirectory + "/mosquitto.conf"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return try await startMosquitto(configFile: file, name: name, port: port, directory: instanceDirectory, clientTLS: clientTLS)
    }

    /// Starts `mosquitto -c configFile` (one written elsewhere, by `baton broker config` say) in the
    /// hub, which must listen on `port` at ``brokerHost`` (or every address); returns once the
    /// port accepts.
    func startMosquitto(
        configFile: String, name: String = "home", port: Int, directory instanceDirectory: String? = nil,
        clientTLS: MQTTClientTLS? = nil
    ) async throws -> MosquittoInstance {
        let instance = MosquittoInstance(
            name: name, host: Self.brokerHost, port: port, configPath: configFile,
            directory: instanceDirectory ?? URL(fileURLWithPath: configFile).deletingLastPathComponent().path,
            clientTLS: clientTLS, network: self)
        try await instance.start()
        return instance
    }

    /// Two brokers in the hub, bridged as a household's would be: `home` (devices in `a`, say)
    /// connects out to `cloud` (devices in `b`) over an MQTT 5 bridge carrying `baton/#` both
    /// ways at QoS 1. The bridge section is added to `homeConfig`, with `bridgeOptions` (lines of
    /// the `connection` section: `bridge_cafile`, ... for a TLS cloud) after it. Returns once a
    /// message has crossed the bridge each way (on topics `baton/bridge-probe/...`, not retained).
    func startBridgedPair(
        homeConfig: String = plainConfig, cloudConfig: String = plainConfig,
        homeTLS: MQTTClientTLS? = nil, cloudTLS: MQTTClientTLS? = nil, bridgeOptions: String = ""
    ) async throws -> (home: MosquittoInstance, cloud: MosquittoInstance) {
        let cloud = try await startMosquitto(config: cloudConfig, name: "cloud", clientTLS: cloudTLS)
        let port = freshPort()
        let bridge = """

            connection cloud
            address \(Self.brokerHost):\(cloud.port)
            bridge_protocol_version mqttv50
            remote_clientid baton-bridge-home-\(port)
            topic baton/# both 1
            restart_timeout 1 5
            \(bridgeOptions)

            """
        let home = try await startMosquitto(config: homeConfig + bridge, name: "home", port: port, clientTLS: homeTLS)
        try await waitForBridge(from: home, to: cloud)
        try await waitForBridge(from: cloud, to: home)
        return (home, cloud)
    }

    /// Waits (at most 20 s) until a message published on `from` reaches a subscriber on `to`,
    /// publishing again every 200 ms (the subscriber, or the bridge's subscription, may not be
    /// in place for the first).
    func waitForBridge(from: MosquittoInstance, to: MosquittoInstance) async throws {
        let topic = "baton/bridge-probe/" + NamespaceSpawner.tag()
        let probe = try await subscribe(to: to, topic: topic)
        let deadline = Date().addingTimeInterval(20)
        while probe.captured().isEmpty {
            guard Date() < deadline else {
                await probe.stop()
                throw NamespacePair.Failure("""
                    nothing published on \(from.name) reached \(to.name) within 20 s; \(from.name)'s log:
                    \(from.log)
                    \(to.name)'s log:
                    \(to.log)
                    """)
            }
            try await publish(to: from, topic: topic, message: "probe")
            try await Task.sleep(for: .milliseconds(200))
        }
        await probe.stop()
    }

    /// Runs `mosquitto_pub -V mqttv5` in `namespace` (the hub by default) to completion (killed
    /// after 15 s): `payload` (exactly, from a file; empty: a zero-length message) to `topic` on
    /// `broker`, at `qos`, retained if asked, reaching it as `tls` says (the broker's own
    /// ``MosquittoInstance/clientTLS`` unless given), with `arguments` after (`-D publish ...`).
    @discardableResult
    func publish(
        in namespace: String? = nil, to broker: MosquittoInstance, topic: String, payload: [UInt8], retain: Bool = false,
        qos: Int = 1, tls: MQTTClientTLS? = nil, arguments: [String] = []
    ) async throws -> CLIResult {
        var args = ["-V", "mqttv5", "-h", broker.host, "-p", String(broker.port)] + ((tls ?? broker.clientTLS)?.arguments ?? [])
        args += ["-t", topic, "-q", String(qos)] + (retain ? ["-r"] : [])
        if payload.isEmpty {
            args.append("-n")
        } else {
            let file = directory.file("payload-\(NamespaceSpawner.tag())")
            try Data(payload).write(to: URL(fileURLWithPath: file))
            args += ["-f", file]
        }
        return try await spawner.run(in: namespace ?? hub, "mosquitto_pub", args + arguments, prefix: "pub", limit: 15)
    }

    /// ``publish(in:to:topic:payload:retain:qos:tls:arguments:)`` with `message`'s UTF-8 bytes.
    @discardableResult
    func publish(
        in namespace: String? = nil, to broker: MosquittoInstance, topic: String, message: String, retain: Bool = false,
        qos: Int = 1, tls: MQTTClientTLS? = nil, arguments: [String] = []
    ) async throws -> CLIResult {
        try await publish(
            in: namespace, to: broker, topic: topic, payload: Array(message.utf8), retain: retain, qos: qos, tls: tls,
            arguments: arguments)
    }

    /// Starts `mosquitto_sub -V mqttv5 -q 1` on `topic` in `namespace` (the hub by default)
    /// against `broker` (reached as `tls` says, the broker's own way unless given), recording
    /// every message with its exact bytes; returns once the broker granted the subscription
    /// (throws with its output if it refused it or the client ended). After a broker restart,
    /// subscribe anew: what is published before `mosquitto_sub` reconnects is lost to it.
    func subscribe(
        in namespace: String? = nil, to broker: MosquittoInstance, topic: String = "#", tls: MQTTClientTLS? = nil,
        arguments: [String] = []
    ) async throws -> BrokerCapture {
        let tag = NamespaceSpawner.tag()
        let stdout = directory.file("sub-\(tag).out"), stderr = directory.file("sub-\(tag).err")
        var args = ["-V", "mqttv5", "-h", broker.host, "-p", String(broker.port)] + ((tls ?? broker.clientTLS)?.arguments ?? [])
        // -d: its "Subscribed" line says when the subscription is in place.
        args += ["-i", "baton-capture-\(tag)", "-q", "1", "-d", "-F", BrokerCapture.format, "-t", topic] + arguments
        // Line-buffered: mosquitto_sub flushes only after a message, not after its debug lines.
        let process = try spawner.spawn(
            in: namespace ?? hub, "stdbuf", ["-oL", "mosquitto_sub"] + args, stdout: stdout, stderr: stderr)
        let capture = BrokerCapture(broker: broker.name, topic: topic, process: process, stdout: stdout, stderr: stderr)
        try await capture.waitUntilSubscribed()
        return capture
    }

    /// Records everything that crosses `broker` (`#`, so every topic but `$SYS/...`), from the
    /// hub; ``BrokerCapture/captured()`` reads it. A broker that requires client certificates
    /// needs `tls` with one its ACL lets read `#`.
    func subscribeAll(on broker: MosquittoInstance, tls: MQTTClientTLS? = nil) async throws -> BrokerCapture {
        try await subscribe(to: broker, topic: "#", tls: tls)
    }

    /// Makes `path` belong to the `mosquitto` user and group with `mode`, so a broker that
    /// dropped to that user can read it (a key: 0o600) or use it (its directory: 0o700).
    static func handToMosquitto(_ path: String, mode: mode_t = 0o600) throws {
        guard let user = getpwnam("mosquitto") else { throw NamespacePair.Failure("there is no mosquitto user (apt install mosquitto)") }
        guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0, chmod(path, mode) == 0 else {
            throw NamespacePair.Failure("cannot hand \(path) to the mosquitto user: \(String(cString: strerror(errno)))")
        }
    }
}
