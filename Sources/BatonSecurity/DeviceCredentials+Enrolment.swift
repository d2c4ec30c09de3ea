import BatonCore
import Crypto
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension DeviceCredentials {
    /// Makes a device file for a new device named `name`, and records it among the enrolled.
    /// Only a device holding the account's key can. The file carries the account's broker, if
    /// one is stored in `folder`.
    public func exportDevice(named name: String, in folder: ConfigurationFolder) throws -> DeviceBundle {
        guard let authority else {
            throw SecurityError.refused("this device does not hold the account's key; export from the device that made the account")
        }
        return try folder.withLock {
            var bundle = try DeviceBundle.make(named: name, by: authority, id: UUID().uuidString.lowercased())
            bundle.broker = try folder.broker()
            try EnrolledDevice.record(EnrolledDevice(certificate: bundle.certificate, id: bundle.deviceID, name: name), in: folder)
            return bundle
        }
    }

    /// Makes `folder` this device's home in `bundle`'s account: its id, key and certificate. The
    /// files they replace are moved to `replaced-<time>/` in the folder, not deleted. Returns
    /// the new credentials. The bundle's broker, if it carries one, becomes the account's.
    public static func install(_ bundle: DeviceBundle, in folder: ConfigurationFolder, now: Date = Date()) throws -> DeviceCredentials {
        try folder.withLock {
            try moveAccountAside(in: folder, now: now)
            let credentials = try DeviceCredentials(
                deviceID: bundle.deviceID.lowercased(), accountCertificate: bundle.accountCertificate, accountKey: nil,
                certificate: bundle.certificate, key: bundle.key)
            try folder.write(credentials.deviceID + "\n", to: "device-id", mode: 0o644)
            try credentials.save(to: folder)
            if let broker = bundle.broker { try folder.setBroker(broker) }
            return credentials
        }
    }

    /// Moves this device's identity and account files, if any, into a new `replaced-<time>/` in
    /// `folder` (`replaced-<time>-2/` and on if that exists), so that what a device leaves behind
    /// can be restored. Call holding the folder's lock.
    static func moveAccountAside(in folder: ConfigurationFolder, now: Date) throws {
        let names = [files.account, files.accountKey, files.device, files.deviceKey, "device-id",
                     EnrolledDevice.file, RevocationList.file, Invitation.file, ConfigurationFolder.brokerFile]
        let present = names.filter { FileManager.default.fileExists(atPath: folder.file($0)) }
        guard !present.isEmpty else { return }
        // `20261121T154301Z`: a time that sorts and fits in a file name.
        let second = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let stamp = "replaced-" + ISO8601.format(second).filter { $0 != "-" && $0 != ":" }
        // Two replacements in one second must not mix their files.
        var directory = stamp
        var attempt = 1
        while FileManager.default.fileExists(atPath: folder.file(directory)) {
            attempt += 1
            directory = "\(stamp)-\(attempt)"
        }
        let backup = ConfigurationFolder(path: folder.file(directory))
        try backup.create()
        for name in present where rename(folder.file(name), backup.file(name)) != 0 {
            throw SecurityError.storage("cannot move \(folder.file(name)) aside: \(String(cString: strerror(errno)))")
        }
    }
}
