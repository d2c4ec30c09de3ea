import BatonCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An invite code this device handed out, as it remembers it (`invites.json`, 0600): the SHA-256
/// of its secret, never the secret, so that the file does not hold a usable code.
struct Invitation: Sendable, Equatable {
    /// SHA-256 of the code's secret, in hex.
    var secretHash: String
    /// When the code was made.
    var created: Date
    /// When it stops working.
    var expires: Date
    /// When it was redeemed; nil while it can still be.
    var used: Date?

    static let file = "invites.json"
    /// How long an expired invitation is kept, so that trying it says "expired", not "not known".
    static let keptAfterExpiry: TimeInterval = 86_400

    /// The hash an invitation keeps of `secret`.
    static func hash(_ secret: [UInt8]) -> String {
        SHA256.hash(data: secret).hexDigits
    }

    var json: JSON {
        .object([
            .init("secret_sha256", .string(secretHash)),
            .init("created", .string(ISO8601.format(created))),
            .init("expires", .string(ISO8601.format(expires))),
            .init("used", used.map { .string(ISO8601.format($0)) } ?? .null),
        ])
    }

    init(secretHash: String, created: Date, expires: Date, used: Date?) {
        self.secretHash = secretHash
        self.created = created
        self.expires = expires
        self.used = used
    }

    init?(json: JSON) {
        guard let secretHash = json["secret_sha256"]?.stringValue,
              let created = json["created"]?.stringValue.flatMap(ISO8601.parse),
              let expires = json["expires"]?.stringValue.flatMap(ISO8601.parse) else { return nil }
        self.init(secretHash: secretHash, created: created, expires: expires, used: json["used"]?.stringValue.flatMap(ISO8601.parse))
    }

    /// The invitations kept in `folder`; empty when there are none.
    static func all(in folder: ConfigurationFolder) throws -> [Invitation] {
        guard let text = try folder.read(file) else { return [] }
        guard let list = try? JSON.parse(text).arrayValue else {
            throw SecurityError.damaged("\(folder.file(file)) is not a JSON list of invitations")
        }
        return list.compactMap(Invitation.init(json:))
    }

    /// Writes `list` to `folder`, leaving out what expired over a day before `now`. Call holding
    /// the folder's lock.
    static func store(_ list: [Invitation], in folder: ConfigurationFolder, now: Date) throws {
        let kept = list.filter { now.timeIntervalSince($0.expires) <= keptAfterExpiry }
        try folder.write(JSON.array(kept.map(\.json)).serialized(pretty: true) + "\n", to: file, mode: 0o600)
    }
}
