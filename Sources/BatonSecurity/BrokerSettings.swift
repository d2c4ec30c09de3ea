import X509
import SwiftASN1

/// The MQTT 5 broker an account's devices meet through: its URL, checked, and the CA its
/// server certificate chains to when that is not the account's own CA.
///
/// URLs are `mqtts://HOST:PORT` (TLS; port 8883 when none is given) or `mqtt://HOST[:PORT]`
/// (plaintext, port 1883 by default: for a broker on a trusted host only, as the broker then
/// sees who talks to whom, though never what they say). HOST is a DNS name, an IPv4 address or
/// an IPv6 address in brackets. Nothing else (user, path, query) is accepted.
public struct BrokerSettings: Sendable, Hashable {
    /// The transport the URL names.
    public enum Scheme: String, Sendable, Hashable {
        /// MQTT over TLS.
        case mqtts
        /// MQTT over plain TCP.
        case mqtt

        /// The port a URL of this scheme means when it gives none.
        public var defaultPort: Int { self == .mqtts ? 8883 : 1883 }
    }

    /// `mqtts` or `mqtt`.
    public let scheme: Scheme
    /// The broker's host: a DNS name, or an IP address (without brackets).
    public let host: String
    /// The broker's port.
    public let port: Int
    /// The PEM of the CA (one certificate or more) the broker's server certificate chains to;
    /// nil for the account's CA (a broker set up by `baton broker config`).
    public let caPEM: String?

    /// How a URL is written, for messages that say what is wrong.
    public static let form = "mqtts://HOST:PORT (TLS, port 8883 by default) or mqtt://HOST[:PORT] (plaintext, port 1883 by default, for a trusted host only)"

    /// The settings `url` names, with the CA `caPEM` (nil: the account's). Throws
    /// ``Invalid`` saying what is wrong and the form a URL takes.
    public init(url: String, caPEM: String? = nil) throws(Invalid) {
        let text = url
        let scheme: Scheme
        let rest: Substring
        if text.lowercased().hasPrefix("mqtts://") {
            (scheme, rest) = (.mqtts, text.dropFirst(8))
        } else if text.lowercased().hasPrefix("mqtt://") {
            (scheme, rest) = (.mqtt, text.dropFirst(7))
        } else {
            throw Invalid("'\(url)' is not a broker URL: use \(Self.form)")
        }
        // A trailing slash is harmless; a path, query, user or fragment is not ours to ignore.
        let authority = rest.hasSuffix("/") ? rest.dropLast() : rest
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else {
            throw Invalid("'\(url)' is not a broker URL (only a host and a port, no user, path or query): use \(Self.form)")
        }
        let host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw Invalid("'\(url)' has an unclosed [: use \(Self.form)") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw Invalid("'\(url)' has no IPv6 address in its brackets: use \(Self.form)")
            }
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Invalid("'\(url)' has text after its host: use \(Self.form)") }
                portText = after.dropFirst()
            }
        } else {
            let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw Invalid("'\(url)': an IPv6 address goes in brackets, as mqtts://[::1]:8883; use \(Self.form)") }
            host = parts[0]
            if parts.count == 2 { portText = parts[1] }
            guard Self.isHostName(host) else { throw Invalid("'\(url)' has no valid host name: use \(Self.form)") }
        }
        var port = scheme.defaultPort
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII), let number = Int(portText), (1...65535).contains(number) else {
                throw Invalid("'\(url)' has no valid port (1 to 65535): use \(Self.form)")
            }
            port = number
        }
        if let caPEM {
            guard (try? Self.certificates(inPEM: caPEM))?.isEmpty == false else {
                throw Invalid("the broker's CA file holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
            }
        }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
        self.caPEM = caPEM
    }

    /// What ``init(url:caPEM:)`` says of a URL or CA it refuses.
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// The URL, written the one way: scheme, host (an IPv6 address in brackets) and port.
    public var url: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        return "\(scheme.rawValue)://\(shown):\(port)"
    }

    /// Whether the link to the broker is plaintext (`mqtt://`).
    public var isPlaintext: Bool { scheme == .mqtt }

    /// The certificates of `pem` (PEM blocks of type CERTIFICATE; others are skipped).
    public static func certificates(inPEM pem: String) throws -> [Certificate] {
        try PEMDocument.parseMultiple(pemString: pem).filter { $0.discriminator == "CERTIFICATE" }.map { try Certificate(derEncoded: $0.derBytes) }
    }

    /// A DNS name or IPv4 address: labels of letters, digits, `-` and `_`, separated by dots.
    static func isHostName(_ host: Substring) -> Bool {
        guard !host.isEmpty, host.count <= 253 else { return false }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            !label.isEmpty && label.count <= 63 && !label.hasPrefix("-")
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
    }
}
