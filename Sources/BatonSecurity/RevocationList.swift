import BatonCore
import Crypto
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The devices an account no longer trusts, signed by its CA so that any device can pass it on
/// and any device of the account can check it. A higher `version` supersedes a lower one.
public struct RevocationList: Sendable, Equatable {
    /// One revoked device.
    public struct Entry: Sendable, Equatable {
        /// The device's id.
        public var id: String
        /// Its certificate's serial number in hex.
        public var serial: String
        /// When it was revoked (whole seconds).
        public var revoked: Date
    }

    /// The account whose CA signed the list.
    public var account: AccountFingerprint
    /// Counts up with every revocation.
    public var version: Int
    /// The devices revoked, in the order they were.
    public var entries: [Entry]

    static let file = "revocations.json"

    /// Whether `certificate`, naming device `id`, is revoked.
    public func revokes(_ certificate: Certificate, id: String) -> Bool {
        let serial = certificate.serialNumber.bytes.hexDigits
        return entries.contains { $0.id == id.lowercased() || $0.serial == serial }
    }

    /// The signed part, serialized the one way that is signed and checked.
    private var payload: String {
        JSON.object([
            .init("account", .string(account.hex)), .init("version", .int(Int64(version))),
            .init("revoked", .array(entries.map { entry in
                .object([.init("id", .string(entry.id)), .init("serial", .string(entry.serial)),
                         .init("revoked", .string(ISO8601.format(entry.revoked)))])
            })),
        ]).serialized()
    }

    /// The list with `authority`'s signature, as text to store or send.
    public func signed(by authority: CertificateAuthority) throws -> String {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: authority.key.serializeAsPEM().pemString) else {
            throw SecurityError.damaged("the account's key is not a P-256 key")
        }
        let signature = try key.signature(for: Data(payload.utf8))
        return JSON.object([
            .init("list", .string(payload)), .init("signature", .string(Base64.encode(Array(signature.derRepresentation)))),
        ]).serialized() + "\n"
    }

    /// Reads a signed list and checks its signature against `accountCertificate`. A list that
    /// was changed after signing, or signed by another account, is refused.
    public static func verify(_ text: String, accountCertificate: Certificate) throws -> RevocationList {
        guard let outer = try? JSON.parse(text), let payload = outer["list"]?.stringValue,
              let signatureText = outer["signature"]?.stringValue else {
            throw SecurityError.damaged("not a revocation list")
        }
        guard let publicKey = P256.Signing.PublicKey(accountCertificate.publicKey),
              let signatureBytes = Base64.decode(signatureText),
              let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes),
              publicKey.isValidSignature(signature, for: Data(payload.utf8)) else {
            throw SecurityError.refused("the revocation list's signature does not check out: changed, or not this account's")
        }
        guard let json = try? JSON.parse(payload), let accountHex = json["account"]?.stringValue,
              let account = AccountFingerprint(hex: accountHex), let version = json["version"]?.intValue,
              let list = json["revoked"]?.arrayValue else {
            throw SecurityError.damaged("the revocation list cannot be read")
        }
        guard account == (try AccountFingerprint(of: accountCertificate)) else {
            throw SecurityError.refused("the revocation list is another account's")
        }
        let entries = list.compactMap { item -> Entry? in
            guard let id = item["id"]?.stringValue, let serial = item["serial"]?.stringValue,
                  let revoked = item["revoked"]?.stringValue.flatMap(ISO8601.parse) else { return nil }
            return Entry(id: id, serial: serial, revoked: revoked)
        }
        return RevocationList(account: account, version: Int(version), entries: entries)
    }

    /// The list kept in `folder`, checked; an empty version 0 when there is none.
    public static func load(from folder: ConfigurationFolder, accountCertificate: Certificate) throws -> RevocationList {
        guard let text = try folder.read(file) else {
            return RevocationList(account: try AccountFingerprint(of: accountCertificate), version: 0, entries: [])
        }
        return try verify(text, accountCertificate: accountCertificate)
    }

    /// Stores `text` (a signed list) in `folder` if it checks out and is newer than the one
    /// there; returns whether it was.
    @discardableResult
    public static func adopt(_ text: String, in folder: ConfigurationFolder, accountCertificate: Certificate) throws -> Bool {
        let offered = try verify(text, accountCertificate: accountCertificate)
        return try folder.withLock {
            guard offered.version > (try load(from: folder, accountCertificate: accountCertificate)).version else { return false }
            try folder.write(text, to: file, mode: 0o644)
            return true
        }
    }
}

extension DeviceCredentials {
    /// Revokes enrolled device `nameOrID` (a name or an id of `enrolled.json`): a new list,
    /// one version up, signed and stored. Only a device holding the account's key can.
    public func revoke(_ nameOrID: String, in folder: ConfigurationFolder, now: Date = Date()) throws -> (EnrolledDevice, RevocationList) {
        guard let authority else {
            throw SecurityError.refused("this device does not hold the account's key; revoke from the device that made the account")
        }
        return try folder.withLock {
            let enrolled = try EnrolledDevice.all(in: folder)
            let matches = enrolled.filter { $0.id == nameOrID.lowercased() || $0.name == nameOrID }
            guard let device = matches.first else { throw SecurityError.refused("no enrolled device is named \(nameOrID)") }
            guard matches.count == 1 else {
                throw SecurityError.refused("several enrolled devices are named \(nameOrID): \(matches.map(\.id).joined(separator: ", ")); give an id")
            }
            var list = try RevocationList.load(from: folder, accountCertificate: accountCertificate)
            if !list.entries.contains(where: { $0.id == device.id }) {
                // Whole seconds: what the signed text carries.
                let revoked = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
                list.entries.append(RevocationList.Entry(id: device.id, serial: device.serial, revoked: revoked))
            }
            list.version += 1
            try folder.write(try list.signed(by: authority), to: RevocationList.file, mode: 0o644)
            return (device, list)
        }
    }
}
