// The revocation list: what a peer passes on in its Hello / HelloAck (`revocation_list`) and a
// JoinResponse, and what `revocations.json` holds. RevocationList.verify reads the outer JSON,
// checks the CA's signature, then reads the signed payload.
//
// Input: one byte choosing how it is read, then text.
// - Even: the text is a whole signed list, checked against the account certificate of a CA made
//   at start (so nearly always refused, by the outer reading or the signature).
// - Odd: the text is the signed payload; the harness signs it with that CA, so the fuzzer reaches
//   the payload's reading. `@ACCOUNT@` in it becomes the CA's fingerprint in hex, so that the
//   account can match.
// Checked: nothing traps; a list that verifies names the CA's account, and signed again it
// verifies again (after one re-signing the list is stable: dates are kept to the millisecond).
import BatonCore
import BatonSecurity
import Crypto
import Foundation
import FuzzSupport
import X509

let authority = try! CertificateAuthority.create()
nonisolated(unsafe) let signingKey = try! P256.Signing.PrivateKey(pemRepresentation: authority.key.serializeAsPEM().pemString)
let account = try! authority.fingerprint

/// `payload` signed by the CA, as RevocationList.signed(by:) writes a list.
func signed(_ payload: String) -> String {
    let signature = try! signingKey.signature(for: Data(payload.utf8))
    return JSON.object([
        .init("list", .string(payload)), .init("signature", .string(Base64.encode(Array(signature.derRepresentation)))),
    ]).serialized() + "\n"
}

fuzz { input in
    guard let first = input.first else { return }
    var text = String(decoding: input.dropFirst(), as: UTF8.self)
    if first & 1 == 1 {
        text = signed(text.replacing("@ACCOUNT@", with: account.hex))
    }
    guard let list = try? RevocationList.verify(text, accountCertificate: authority.certificate) else { return }
    note("a list of version \(list.version), \(list.entries.count) entries")
    guard list.account == account else { fuzzFailure("a list verified for another account: \(list.account)") }
    let once: RevocationList
    do {
        once = try RevocationList.verify(list.signed(by: authority), accountCertificate: authority.certificate)
    } catch {
        fuzzFailure("a verified list, signed again, does not verify: \(error)\n\(list)")
    }
    guard once.version == list.version, once.entries.map(\.id) == list.entries.map(\.id),
          once.entries.map(\.serial) == list.entries.map(\.serial) else {
        fuzzFailure("a verified list, signed again, reads back otherwise:\n\(list)\n\(once)")
    }
    guard let twice = try? RevocationList.verify(once.signed(by: authority), accountCertificate: authority.certificate),
          twice == once else {
        fuzzFailure("a list signed a second time reads back otherwise:\n\(once)")
    }
}
