import BatonCore
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A device the account's CA issued a certificate to, as the CA holder remembers it
/// (`enrolled.json`).
public struct EnrolledDevice: Sendable, Equatable {
    /// The device's id.
    public var id: String
    /// The name it was enrolled under.
    public var name: String
    /// Its certificate's serial number, in hex.
    public var serial: String
    /// When it was enrolled.
    public var enrolled: Date

    /// A record with the given fields.
    public init(id: String, name: String, serial: String, enrolled: Date) {
        self.id = id
        self.name = name
        self.serial = serial
        self.enrolled = enrolled
    }

    /// The record of `certificate`, issued to device `id` as `name`.
    public init(certificate: Certificate, id: String, name: String) {
        // Certificates start an hour early (clock skew); the enrolment was then.
        self.init(id: id, name: name, serial: certificate.serialNumber.bytes.hexDigits, enrolled: certificate.notValidBefore + CertificateAuthority.backdating)
    }

    var json: JSON {
        .object([
            .init("id", .string(id)), .init("name", .string(name)), .init("serial", .string(serial)),
            .init("enrolled", .string(ISO8601.format(enrolled))),
        ])
    }

    init?(json: JSON) {
        guard let id = json["id"]?.stringValue, let name = json["name"]?.stringValue,
              let serial = json["serial"]?.stringValue,
              let enrolled = json["enrolled"]?.stringValue.flatMap(ISO8601.parse) else { return nil }
        self.init(id: id, name: name, serial: serial, enrolled: enrolled)
    }

    static let file = "enrolled.json"

    /// The devices enrolled from `folder`'s CA, oldest first; empty when there are none.
    public static func all(in folder: ConfigurationFolder) throws -> [EnrolledDevice] {
        guard let text = try folder.read(file) else { return [] }
        guard let list = try? JSON.parse(text).arrayValue else {
            throw SecurityError.damaged("\(folder.file(file)) is not a JSON list of devices")
        }
        return list.compactMap(EnrolledDevice.init(json:))
    }

    /// Adds `device` to `folder`'s list (replacing an earlier record of the same id). Call
    /// holding the folder's lock.
    static func record(_ device: EnrolledDevice, in folder: ConfigurationFolder) throws {
        var list = try all(in: folder).filter { $0.id != device.id }
        list.append(device)
        try folder.write(JSON.array(list.map(\.json)).serialized(pretty: true) + "\n", to: file, mode: 0o644)
    }
}
