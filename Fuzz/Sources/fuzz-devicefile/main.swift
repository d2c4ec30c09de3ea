// The device file: what `baton account import FILE` reads, a JSON object carrying the account's
// certificate, a device's certificate and its key as PEM (DeviceBundle.parse), from whoever
// handed the file over.
//
// Input: the file's text. So that the fuzzer reaches past the certificates, `@ACCOUNT@`,
// `@DEVICE@` and `@KEY@` in it become the PEM blocks (JSON-escaped) of a bundle made at start for
// device `@ID@` (its id), and `@OTHER@` a certificate of another CA. Checked: nothing traps; a
// bundle that parses names its certificate's device, serializes and parses back as itself.
import BatonCore
import BatonSecurity
import Foundation
import FuzzSupport
import X509

let id = "8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f"
let authority = try! CertificateAuthority.create()
let bundle = try! DeviceBundle.make(named: "Fuzz TV", by: authority, id: id)
let other = try! CertificateAuthority.create()

/// `pem` as the inside of a JSON string.
func escaped(_ pem: String) -> String {
    pem.replacing("\n", with: "\\n")
}

let replacements = [
    ("@ACCOUNT@", escaped(try! bundle.accountCertificate.serializeAsPEM().pemString + "\n")),
    ("@DEVICE@", escaped(try! bundle.certificate.serializeAsPEM().pemString + "\n")),
    ("@KEY@", escaped(try! bundle.key.serializeAsPEM().pemString + "\n")),
    ("@OTHER@", escaped(try! other.certificate.serializeAsPEM().pemString)),
    ("@ID@", id),
]

fuzz { input in
    var text = String(decoding: input, as: UTF8.self)
    for (placeholder, value) in replacements where text.contains(placeholder) {
        text = text.replacing(placeholder, with: value)
    }
    guard let parsed = try? DeviceBundle.parse(text) else { return }
    note("a device file for \(parsed.deviceID)")
    guard DeviceCertificate.deviceID(of: parsed.certificate) == parsed.deviceID.lowercased() else {
        fuzzFailure("a device file's certificate names another device than its id: \(parsed.deviceID)")
    }
    let again: DeviceBundle
    do {
        again = try DeviceBundle.parse(parsed.serialized())
    } catch {
        fuzzFailure("a device file, serialized again, does not parse: \(error)")
    }
    guard again.deviceID == parsed.deviceID, again.name == parsed.name, again.certificate == parsed.certificate,
          again.accountCertificate == parsed.accountCertificate, again.key.publicKey == parsed.key.publicKey else {
        fuzzFailure("a device file, serialized again, reads back otherwise")
    }
}
