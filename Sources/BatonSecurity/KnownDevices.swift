import BatonCore
import Crypto
#if canImport(Glibc)
import Glibc
#endif
import NIOConcurrencyHelpers
import SwiftASN1
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The devices this device has met, pinned as OpenSSH pins host keys (`known-devices.json` in
/// the configuration folder): which account each device id proved to belong to in a handshake,
/// the key a device of another account proved it holds, and the name a device of this account
/// gave when it described itself.
///
/// What discovery says of a device (an id, an account, a name) is a hint; what is written here
/// came from handshakes only. A device id pinned to this account is reached only by a peer that
/// proves this account, whatever a source claims later; a device of another account must come
/// back with the same account and key. Only this account's CA can move an id: a device it
/// issued a certificate to is ours, whatever was pinned before (our CA names an id only for a
/// device the owner enrolled).
///
/// Shared by every connection of a process and safe from any thread; a pin is written to the
/// file the first time it is learnt (merged under the folder's lock with what other processes
/// wrote), so the file changes only when a device is met for the first time. Writes happen on
/// a queue of their own, never on the event loop whose handshake learnt the pin (the folder's
/// lock may be held by another process), and are finished before the process exits.
public final class KnownDevices: Sendable {
    /// The file's name in the configuration folder.
    public static let file = "known-devices.json"
    /// Its own lock: pins change apart from the account, and an event loop adopting a peer's
    /// revocation list waits for the account's lock.
    static let lockFile = "known-devices.lock"

    /// What a handshake proved of one device id.
    public struct Pin: Sendable, Equatable {
        /// The account it proved; this device's own for a device of the account.
        public var account: AccountFingerprint
        /// SHA-256 of its certificate's public key (SubjectPublicKeyInfo), in hex: pinned for
        /// devices of other accounts, whose CA is theirs, not ours.
        public var key: String
        /// The name it gave in a Describe over an authenticated connection; empty if none yet.
        public var name: String

        public init(account: AccountFingerprint, key: String, name: String = "") {
            self.account = account
            self.key = key
            self.name = name
        }
    }

    private let folder: ConfigurationFolder?
    private let own: AccountFingerprint
    private let pins: NIOLockedValueBox<[String: Pin]>

    /// The pins of `folder` for a device of account `own`; nothing is written when `folder` is
    /// nil (tests, and devices without a folder). A damaged file is treated as empty (it is
    /// rewritten whole with what is learnt next), never as a reason to refuse to start.
    public init(folder: ConfigurationFolder?, own: AccountFingerprint) {
        self.folder = folder
        self.own = own
        var pins = folder.map { (try? Self.read(in: $0)) ?? [:] } ?? [:]
        // The devices the account's holder enrolled are its own before any handshake.
        for device in folder.flatMap({ try? EnrolledDevice.all(in: $0) }) ?? [] where pins[device.id.lowercased()] == nil {
            pins[device.id.lowercased()] = Pin(account: own, key: "", name: device.name)
        }
        self.pins = NIOLockedValueBox(pins)
    }

    /// The pin of device `id` (any case), if it was ever proven.
    public func pin(for id: String) -> Pin? {
        pins.withLockedValue { $0[id.lowercased()] }
    }

    /// Every device pinned, by id.
    public var all: [String: Pin] {
        pins.withLockedValue { $0 }
    }

    /// Whether device `id` proved to be of this account.
    public func isOwn(_ id: String) -> Bool {
        pin(for: id)?.account == own
    }

    /// What a connection to device `id` must prove, given what its source said (`claimed`): a
    /// device pinned to this account must prove this account, whatever the source claims; one
    /// pinned to another account must prove that one (this account's CA can still take it).
    /// Throws ``SecurityError/refused(_:)`` when the claim names a third account, which a
    /// stranger's advertisement does.
    public func expectation(for id: String?, claimed: AgentExpectation) throws -> AgentExpectation {
        guard let id, let pin = pin(for: id) else { return claimed }
        if pin.account == own { return .ownAccount }
        switch claimed {
        case .account(let other) where other != pin.account && other != own:
            throw SecurityError.refused(
                "device \(id.lowercased()) is known as a device of account \(pin.account.short)…, and is now said to be of account \(other.short)…: refused (if it really moved, forget it with `baton account forget \(id.lowercased())`)")
        case .ownAccount, .anyAccount, .account, .invitedBy:
            return claimed
        }
    }

    /// Checks what a handshake proved against the pins and learns what is new: an id pinned to
    /// another account or key than the one proven is refused (``SecurityError/refused(_:)``),
    /// unless this account's CA issued the certificate (then it is ours, and the pin moves).
    public func check(_ identity: PeerIdentity) throws {
        guard let id = identity.deviceID, let account = identity.account else { return }
        let key = identity.publicKey.map(Self.keyDigest) ?? ""
        let ours = identity.authorization == .sameAccount
        let learnt: Pin? = try pins.withLockedValue { pins in
            if let pin = pins[id] {
                if ours {
                    guard pin.account != own || pin.key != key else { return nil }
                    pins[id] = Pin(account: own, key: key, name: pin.name)
                    return pins[id]
                }
                if pin.account == own {
                    throw SecurityError.refused("device \(id) is a device of this account, but this agent proved another account (\(account.short)…): refused")
                }
                guard pin.account == account else {
                    throw SecurityError.refused(
                        "device \(id) is known as a device of account \(pin.account.short)…, but this agent proved account \(account.short)…: refused (if it really moved, forget it with `baton account forget \(id)`)")
                }
                guard pin.key == key else {
                    throw SecurityError.refused(
                        "the key of device \(id) (account \(account.short)…) changed since it was first met: refused (if it was set up again, forget it with `baton account forget \(id)`)")
                }
                return nil
            }
            pins[id] = Pin(account: account, key: key)
            return pins[id]
        }
        if let learnt { save(id, learnt) }
    }

    /// Records the name device `id`, proven of this account, gave when it described itself;
    /// not the interim name a name conflict gave it (`Living Room TV (2)` for `Living Room TV`),
    /// which it drops again when the conflict ends.
    public func learnName(_ name: String, for id: String) {
        let id = id.lowercased()
        let learnt: Pin? = pins.withLockedValue { pins in
            guard var pin = pins[id], pin.account == own, !name.isEmpty, pin.name != name,
                  !Self.isConflictRename(name, of: pin.name) else { return nil }
            pin.name = name
            pins[id] = pin
            return pin
        }
        if let learnt { save(id, learnt) }
    }

    /// Forgets device `id`: the next handshake pins it afresh. False if it was not known.
    @discardableResult
    public func forget(_ id: String) throws -> Bool {
        let id = id.lowercased()
        guard pins.withLockedValue({ $0.removeValue(forKey: id) }) != nil else { return false }
        guard let folder else { return true }
        // After any write still queued, which might put it back.
        try FolderWrites.sync {
            try folder.withLock(Self.lockFile) {
                var all = (try? Self.read(in: folder)) ?? [:]
                all[id] = nil
                try folder.write(Self.text(of: all), to: Self.file)
            }
        }
        return true
    }

    /// Whether `candidate` is the name a device called `name` moves to when another takes
    /// its name on the network (RFC 6762 §9): `name (N)`.
    public static func isConflictRename(_ candidate: String, of name: String) -> Bool {
        guard !name.isEmpty, candidate.hasPrefix(name + " ("), candidate.hasSuffix(")") else { return false }
        let digits = candidate.dropFirst(name.count + 2).dropLast()
        return !digits.isEmpty && digits.allSatisfy(\.isNumber)
    }

    /// SHA-256 of `key`'s SubjectPublicKeyInfo, in hex.
    public static func keyDigest(_ key: Certificate.PublicKey) -> String {
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(key)) != nil else { return "" }
        return Array(SHA256.hash(data: serializer.serializedBytes)).hexDigits
    }

    // MARK: the file

    /// Writes one pin, merged under the folder's lock with what the file holds now (another
    /// process may have learnt others meanwhile), through ``FolderWrites``: a handshake's
    /// verification calls it on an event loop.
    private func save(_ id: String, _ pin: Pin) {
        guard let folder else { return }
        FolderWrites.async {
            try? folder.withLock(Self.lockFile) {
                var all = (try? Self.read(in: folder)) ?? [:]
                all[id] = pin
                try folder.write(Self.text(of: all), to: Self.file)
            }
        }
    }

    /// Waits until every pin learnt so far is in the file.
    public static func flush() {
        FolderWrites.flush()
    }

    static func read(in folder: ConfigurationFolder) throws -> [String: Pin] {
        guard let text = try folder.read(file), case .object(let members)? = try JSON.parse(text)["devices"] else { return [:] }
        var pins: [String: Pin] = [:]
        for member in members {
            guard let account = member.value["account"]?.stringValue.flatMap(AccountFingerprint.init(hex:)) else { continue }
            pins[member.key.lowercased()] = Pin(
                account: account, key: member.value["key"]?.stringValue ?? "", name: member.value["name"]?.stringValue ?? "")
        }
        return pins
    }

    static func text(of pins: [String: Pin]) -> String {
        let devices = pins.sorted { $0.key < $1.key }.map { id, pin in
            JSON.Member(id, .object([.init("account", .string(pin.account.hex)), .init("key", .string(pin.key)), .init("name", .string(pin.name))]))
        }
        return JSON.object([.init("version", .int(1)), .init("devices", .object(devices))]).serialized(pretty: true) + "\n"
    }
}
