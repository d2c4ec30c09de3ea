import BatonMQTT
import Foundation
import NIOCore
import NIOSSL
import Testing

/// The client through mosquitto's TLS listener, which requires a client certificate.
@Suite("MQTT client over TLS", .timeLimit(.minutes(1)))
struct MQTTClientTLSTests {
    func brokerWithTLS() throws -> (MosquittoProcess, TestCertificates) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("baton-mqtt-tls-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificates = try TestCertificates(directory: directory)
        let broker = try MosquittoProcess(listenerConfig: """
            cafile \(certificates.caPath)
            certfile \(certificates.serverCertificatePath)
            keyfile \(certificates.serverKeyPath)
            require_certificate true
            use_identity_as_username true
            """)
        return (broker, certificates)
    }

    @Test("a client with a certificate of the CA connects, publishes and receives over TLS")
    func tlsWithClientCertificate() async throws {
        let (broker, certificates) = try brokerWithTLS()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(certificates.caPEM.utf8)))
        tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(certificates.clientCertificatePEM.utf8)).map { .certificate($0) }
        tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(certificates.clientKeyPEM.utf8), format: .pem))
        let delegate = RecordingDelegate()
        let client = try await connectedClient("device-tls", port: broker.port, delegate: delegate) {
            $0.tls = tls
            $0.tlsServerHostname = "localhost"
        }
        _ = try await client.subscribe([MQTTSubscription(filter: "sealed/#")]).get()
        let ack = try await client.publish(MQTTMessage(topic: "sealed/x", payload: ByteBuffer(string: "over tls"))).get()
        #expect(ack.reasonCode == 0)
        try await waitUntil("the message over TLS") { !delegate.messages(on: "sealed/x").isEmpty }
        #expect(broker.log.contains("as device-tls"))
        try await client.stop().get()
    }

    @Test("without a client certificate the TLS listener never lets the client connect")
    func tlsWithoutClientCertificate() async throws {
        let (broker, certificates) = try brokerWithTLS()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(certificates.caPEM.utf8)))
        let logs = LogCapture()
        var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: broker.port, clientID: "stranger", tls: tls)
        configuration.tlsServerHostname = "localhost"
        configuration.reconnectBackoffBase = .milliseconds(50)
        configuration.reconnectBackoffCap = .milliseconds(200)
        let delegate = RecordingDelegate()
        let client = MQTTClient(configuration: configuration, eventLoop: testGroup.next(), logger: logs.logger())
        client.delegate = delegate
        client.start()
        try await waitUntil("two failed attempts") { logs.all.filter { $0.contains("connection failed") }.count >= 2 }
        #expect(delegate.connects.isEmpty)
        try await client.stop().get()
    }
}
