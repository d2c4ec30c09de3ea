import BatonSecurity
import Foundation
import Testing

@Suite("Invite codes")
struct InviteCodeTests {
    @Test func aCodeReadsBackFromItsTextInAnyCaseAndSpacing() throws {
        let fingerprint = try CertificateAuthority.create().fingerprint
        let code = InviteCode.make(for: fingerprint)
        #expect(code.secret.count == 7 && code.accountPrefix == Array(fingerprint.bytes.prefix(8)))
        #expect(code.text.count == 29)
        #expect(code.text.split(separator: "-").map(\.count) == [4, 4, 4, 4, 4, 4])
        #expect(code.text == code.text.uppercased())
        #expect(try InviteCode(parsing: code.text) == code)
        #expect(try InviteCode(parsing: code.text.lowercased()) == code)
        #expect(try InviteCode(parsing: " " + code.text.replacingOccurrences(of: "-", with: " ") + "\n") == code)
        #expect(try InviteCode(parsing: code.text.filter { $0 != "-" }) == code)
        #expect(code.matches(fingerprint))
        #expect(try !code.matches(CertificateAuthority.create().fingerprint))
        #expect(InviteCode.make(for: fingerprint).secret != code.secret)
    }

    @Test func theBytesAreSpelledInCrockfordsBase32() throws {
        let code = try InviteCode(parsing: "0410-6105-0R3G-G28A-1C60-T3GF")
        #expect(code.secret == [1, 2, 3, 4, 5, 6, 7])
        #expect(code.accountPrefix == [8, 9, 10, 11, 12, 13, 14, 15])
        let all = try InviteCode(parsing: "ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ")
        #expect(all.secret == Array(repeating: 0xFF, count: 7) && all.accountPrefix == Array(repeating: 0xFF, count: 8))
        #expect(all.text == "ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ")
    }

    @Test func lettersThatLookLikeDigitsReadAsThem() throws {
        #expect(try InviteCode(parsing: "OOOO-IIII-LLLL-oooo-iiii-llll") == InviteCode(parsing: "0000-1111-1111-0000-1111-1111"))
    }

    @Test func aWrongLengthOrCharacterIsRefusedWithoutRepeatingTheCode() throws {
        #expect(throws: SecurityError.refused("not an invite code: it has 3 letters and digits, not 24")) {
            try InviteCode(parsing: "A-B-C")
        }
        #expect(throws: SecurityError.refused("not an invite code: it has 28 letters and digits, not 24")) {
            try InviteCode(parsing: "0410-6105-0R3G-G28A-1C60-T3GF-0000")
        }
        let typo = "0410-6105-0R3G-G28A-1C60-T3GU"
        #expect {
            try InviteCode(parsing: typo)
        } throws: { error in
            guard case SecurityError.refused(let why) = error else { return false }
            return why.hasPrefix("not an invite code: \"U\"") && !why.contains("0410")
        }
        #expect(throws: SecurityError.self) { try InviteCode(parsing: "0410-6105-0R3G-G28A-1C60-T3G*") }
    }

    @Test func printingACodeShowsItsAccountNeverItsSecret() throws {
        let fingerprint = try CertificateAuthority.create().fingerprint
        let code = InviteCode.make(for: fingerprint)
        let compact = code.text.filter { $0 != "-" }
        let secretHex = code.secret.map { String(format: "%02x", $0) }.joined()
        var dumped = ""
        dump(code, to: &dumped)
        for shown in ["\(code)", String(reflecting: code), dumped, "\([code])", "\(Optional(code) as Any)"] {
            #expect(shown.contains(fingerprint.short), "\(shown)")
            #expect(!shown.contains(code.text) && !shown.contains(compact) && !shown.contains(secretHex), "\(shown)")
            #expect(!shown.contains("\(code.secret)"), "\(shown)")
        }
        #expect("\(code)" == "invite code for account \(fingerprint.short)")
    }
}
