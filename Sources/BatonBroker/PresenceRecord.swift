import BatonCore
import BatonSecurity
import Crypto
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a device's agent says of itself on the broker (`baton/v1/ACCOUNT/DEVICE/presence`,
/// retained): who it says it is, whether it is online, and for how long that holds, signed with
/// its device key and carrying its certificate chain.
///
/// The broker reads it, so it carries no name a person gave (nor model or maker): a watcher
/// learns those from the device itself, over the sealed link (Describe).
///
/// Presence is a hint about where to look, like an mDNS record: a watcher checks the signature
/// and that the chain is a device of its own account naming the topic's device (so a stranger,
/// or the broker, cannot make one up), but who answers is proven only by the sealed handshake.
///
/// Bytes: `BPR1` ‖ u32 JSON length ‖ JSON ‖ u8 certificates ‖ (u32 length ‖ DER)… ‖ u16
/// signature length ‖ ECDSA P-256 signature (DER) over `baton presence v1\0` ‖ topic ‖ `\0` ‖
/// JSON. The JSON: `id`, `kind`, `platform`, `protocol`,
/// `endpoints` (its TCP listeners, for a direct link later), `epoch` (the agent's start, ms: a
/// will of an older run is older), `state` (`online`, `offline` in its will, `leaving` as it stops), `issued` (ms), `lease` (s).
public struct PresenceRecord: Sendable, Equatable {
    public enum State: String, Sendable {
        case online
        /// The agent's will: the broker lost it (a suspicion: the broker sends every will
        /// when it is itself stopped).
        case offline
        /// The agent said goodbye as it stopped.
        case leaving
    }

    public var info: DeviceInfo
    public var protocolVersion: Int
    public var endpoints: [RemoteDevice.Endpoint]
    public var epoch: Int64
    public var state: State
    /// When it was signed, in ms since 1970.
    public var issued: Int64
    /// How long it holds without a fresh one, in seconds.
    public var lease: Int

    public init(
        info: DeviceInfo, protocolVersion: Int = 1, endpoints: [RemoteDevice.Endpoint] = [], epoch: Int64, state: State,
        issued: Int64 = Int64(Date().timeIntervalSince1970 * 1000), lease: Int
    ) {
        self.info = info
        self.protocolVersion = protocolVersion
        self.endpoints = endpoints
        self.epoch = epoch
        self.state = state
        self.issued = issued
        self.lease = lease
    }

    static let magic: [UInt8] = Array("BPR1".utf8)
    static let label: [UInt8] = Array("baton presence v1\u{0}".utf8)
    /// Bigger payloads are not presence (a chain is ~1.2 KB).
    static let maxSize = 16 * 1024

    var json: String {
        JSON.object([
            .init("id", .string(info.id.lowercased())),
            .init("kind", .string(info.kind.rawValue)), .init("platform", .string(info.platform.rawValue)),
            .init("protocol", .int(Int64(protocolVersion))),
            .init("endpoints", .array(endpoints.map { .string($0.description) })),
            .init("epoch", .int(epoch)), .init("state", .string(state.rawValue)),
            .init("issued", .int(issued)), .init("lease", .int(Int64(lease))),
        ]).serialized()
    }

    /// The signed bytes for `topic`, signed by `credentials`' device key.
    public func signed(for topic: String, by credentials: DeviceCredentials) throws -> [UInt8] {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: credentials.key.serializeAsPEM().pemString) else {
            throw SecurityError.damaged("the device key is not a P-256 key")
        }
        let body = Array(json.utf8)
        let signature = try key.signature(for: Self.label + Array(topic.utf8) + [0] + body).derRepresentation
        let chain = try SealCredentials(credentials).chain
        var bytes = Self.magic
        bytes.append(bigEndian: UInt32(body.count))
        bytes += body
        bytes.append(UInt8(chain.count))
        for der in chain {
            bytes.append(bigEndian: UInt32(der.count))
            bytes += der
        }
        bytes.append(bigEndian: UInt16(signature.count))
        bytes += signature
        return bytes
    }

    /// Reads and checks presence heard on `topic` for `device`: signed by that device's key,
    /// its chain a device of `trust`'s account that is not revoked. Throws a reason for the log.
    public static func verify(_ bytes: some Collection<UInt8>, topic: String, device: String, trust: PeerTrust) throws -> PresenceRecord {
        guard bytes.count <= maxSize else { throw SecurityError.refused("presence of \(bytes.count) bytes is too big") }
        var reader = ByteReader(Array(bytes))
        guard reader.take(4) == magic, let length = reader.u32(), let body = reader.take(Int(length)),
              let count = reader.u8(), (1...4).contains(count) else { throw SecurityError.damaged("not Baton presence") }
        var chain: [[UInt8]] = []
        for _ in 0..<count {
            guard let size = reader.u32(), let der = reader.take(Int(size)) else { throw SecurityError.damaged("a cut certificate") }
            chain.append(der)
        }
        guard let size = reader.u16(), let signatureBytes = reader.take(Int(size)), reader.atEnd else {
            throw SecurityError.damaged("a cut signature")
        }
        let identity = try trust.classifyCaller(chain: chain)
        guard identity.authorization == .sameAccount, identity.deviceID == device.lowercased() else {
            throw SecurityError.refused("presence for \(device) signed by \(identity.deviceID ?? "no device") of \(identity.authorization == .sameAccount ? "this" : "another") account")
        }
        guard let certificateKey = identity.publicKey, let key = P256.Signing.PublicKey(certificateKey),
              let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes),
              key.isValidSignature(signature, for: label + Array(topic.utf8) + [0] + body) else {
            throw SecurityError.refused("presence for \(device) whose signature does not check out")
        }
        guard let json = try? JSON.parse(String(decoding: body, as: UTF8.self)),
              let id = json["id"]?.stringValue, id == device.lowercased(),
              let epoch = json["epoch"]?.intValue,
              let state = json["state"]?.stringValue.flatMap(State.init(rawValue:)),
              let issued = json["issued"]?.intValue, let lease = json["lease"]?.intValue, (1...86_400).contains(lease) else {
            throw SecurityError.damaged("presence for \(device) lacks a field")
        }
        let info = DeviceInfo(
            id: id, name: "", kind: json["kind"]?.stringValue.flatMap(DeviceKind.init(rawValue:)) ?? .unknown,
            platform: json["platform"]?.stringValue.flatMap(Platform.init(rawValue:)) ?? .unknown)
        let endpoints = (json["endpoints"]?.arrayValue ?? []).prefix(16).compactMap { $0.stringValue.flatMap { RemoteDevice.Endpoint($0) } }
        return PresenceRecord(
            info: info, protocolVersion: Int(json["protocol"]?.intValue ?? 1), endpoints: endpoints, epoch: epoch, state: state,
            issued: issued, lease: Int(lease))
    }
}

/// Reads big-endian fields off bytes, nil past the end.
private struct ByteReader {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func take(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - index >= count else { return nil }
        defer { index += count }
        return Array(bytes[index..<index + count])
    }

    mutating func u8() -> UInt8? { take(1)?.first }
    mutating func u16() -> UInt16? { take(2).map { UInt16($0[0]) << 8 | UInt16($0[1]) } }
    mutating func u32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }
}

extension Array where Element == UInt8 {
    mutating func append<T: FixedWidthInteger>(bigEndian value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
