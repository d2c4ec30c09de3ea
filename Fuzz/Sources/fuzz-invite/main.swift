// Invite codes and what a joining stranger sends: the code a person types (`baton account join
// CODE`), the JoinRequest's public key (JoinKey: DER SubjectPublicKeyInfo or a bare X9.63 point),
// an account fingerprint in hex, and a Hello's W3C `traceparent`.
//
// Input: one byte choosing the reader (its value mod 4), then its text or bytes. Checked: nothing
// traps; whatever reads writes back to something that reads as the same thing.
import BatonCore
import BatonSecurity
import FuzzSupport
import X509

fuzz { input in
    guard let first = input.first else { return }
    let rest = Array(input.dropFirst())
    let text = String(decoding: rest, as: UTF8.self)
    switch first % 4 {
    case 0:
        guard let code = try? InviteCode(parsing: text) else { return }
        note("\(code)")
        guard let again = try? InviteCode(parsing: code.text), again == code else {
            fuzzFailure("an invite code's text does not read back as the code: \(code.text)")
        }
        guard code.text.utf8.count == 29 else { fuzzFailure("an invite code's text is not 29 characters: \(code.text)") }
        _ = code.description
    case 1:
        guard let fingerprint = AccountFingerprint(hex: text) else { return }
        guard AccountFingerprint(hex: fingerprint.hex) == fingerprint, fingerprint.hex == text.lowercased() else {
            fuzzFailure("a fingerprint's hex does not read back: \(text)")
        }
        _ = fingerprint.short
    case 2:
        guard let key = JoinKey.decode(rest) else { return }
        guard let der = try? JoinKey.encode(key), JoinKey.decode(der) == key else {
            fuzzFailure("a join key does not write and read back: \(rest)")
        }
    default:
        let context = TraceContext(continuing: text)
        guard TraceContext.parse(context.traceparent) != nil else {
            fuzzFailure("a trace context's own traceparent does not parse: \(context.traceparent)")
        }
        if let parsed = TraceContext.parse(text) {
            guard context.traceID == parsed.traceID, context.parentSpanID == parsed.spanID else {
                fuzzFailure("a traceparent was not continued: \(text) → \(context.traceparent)")
            }
        }
    }
}
