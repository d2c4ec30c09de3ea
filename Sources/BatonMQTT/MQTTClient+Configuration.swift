import NIOCore
import NIOSSL

extension MQTTClient {
    /// Where and how to connect. Defaults suit a broker link: clean start, no session kept.
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// TLS through NIOSSL (its trust roots, client certificate); nil is plaintext.
        public var tls: TLSConfiguration?
        /// The name checked against the broker's certificate; nil means `host` (unless
        /// `host` is an IP address).
        public var tlsServerHostname: String?
        public var clientID: String
        /// Seconds between PINGREQs; 0 turns keepalive off. The broker's Server Keep Alive wins.
        public var keepAlive: UInt16 = 30
        /// How long a PINGREQ may wait for its PINGRESP before the connection is called dead.
        public var pingTimeout: TimeAmount = .seconds(10)
        public var cleanStart = true
        public var sessionExpiryInterval: UInt32 = 0
        public var will: MQTTWill?
        public var username: String?
        public var password: [UInt8]?
        /// TCP connect, TLS handshake and CONNACK together.
        public var connectTimeout: TimeAmount = .seconds(10)
        /// Full jitter: a reconnect waits random(0, min(cap, base * 2^attempt)).
        public var reconnectBackoffBase: TimeAmount = .milliseconds(100)
        public var reconnectBackoffCap: TimeAmount = .seconds(30)
        /// The largest packet accepted from the broker (sent as Maximum Packet Size); larger
        /// ones close the connection.
        public var maximumPacketSize: UInt32 = 1_048_576 + 65_536
        /// QoS 1 publishes that may wait for a connection (or for the broker's Receive Maximum).
        public var maximumQueuedPublishes = 10_000

        public init(host: String, port: Int = 1883, clientID: String, tls: TLSConfiguration? = nil) {
            self.host = host
            self.port = port
            self.clientID = clientID
            self.tls = tls
        }
    }
}
