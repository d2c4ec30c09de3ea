import BatonDiscovery
import Testing

@Suite("DNS names")
struct DNSNameTests {
    @Test func parsesInstanceLabelWithSpacesParenthesesAndUTF8() throws {
        let name = try #require(parsed("Living Room TV (2)._baton._tcp.local."))
        #expect(name.labelCount == 4)
        #expect(name.firstLabel == "Living Room TV (2)")
        #expect(name.labels == [ascii("Living Room TV (2)"), ascii("_baton"), ascii("_tcp"), ascii("local")])
        #expect(name.description == "Living Room TV (2)._baton._tcp.local.")
        #expect(name.parent == "_baton._tcp.local.")

        let kitchen = try #require(parsed("Küche 🍳._baton._tcp.local."))
        #expect(kitchen.firstLabelBytes == ascii("Küche 🍳"))
        #expect(kitchen.description == "Küche 🍳._baton._tcp.local.")
    }

    @Test func finalDotIsOptionalAndRootIsEmpty() {
        #expect(parsed("local") == parsed("local."))
        #expect(parsed("local")?.description == "local.")
        #expect(parsed("")?.isRoot == true)
        #expect(parsed(".") == .root)
        #expect(DNSName.root.description == ".")
        #expect(DNSName.root.wireLength == 1)
        #expect(DNSName.root.firstLabel == nil)
        #expect(DNSName.root.parent == nil)
        #expect(name("_baton._tcp.local.").wireLength == 19)
    }

    @Test func equalityAndHashingIgnoreASCIICaseOnly() {
        let lower = name("living room._baton._tcp.local.")
        let mixed = name("Living ROOM._Baton._TCP.Local")
        #expect(lower == mixed)
        #expect(lower.hashValue == mixed.hashValue)
        #expect(Set([lower, mixed]).count == 1)
        // The case is kept for display.
        #expect(mixed.description == "Living ROOM._Baton._TCP.Local.")
        // Only A–Z fold: É and é are different bytes, and so are different names.
        #expect(name("É.local.") != name("é.local."))
        // Label boundaries matter, not just the bytes of the text.
        #expect(name("ab.c.") != name("a.bc."))
        #expect(name("a.local.") != name("b.local."))
    }

    @Test func escapedDotsAndBackslashesStayInsideTheLabel() throws {
        let dotted = try #require(parsed(#"My\.TV._baton._tcp.local."#))
        #expect(dotted.labelCount == 4)
        #expect(dotted.firstLabel == "My.TV")
        #expect(dotted.description == #"My\.TV._baton._tcp.local."#)
        #expect(DNSName(dotted.description) == dotted)

        let slashed = try #require(parsed(#"a\\b.local"#))
        #expect(slashed.firstLabel == #"a\b"#)
        #expect(slashed.description == #"a\\b.local."#)

        // RFC 1035 §5.1 decimal escapes, and a backslash before any other character quotes it.
        #expect(parsed(#"\065\066.local"#)?.firstLabel == "AB")
        #expect(parsed(#"\x.local"#)?.firstLabel == "x")
    }

    @Test func prependingALabelTakesItLiterally() throws {
        let service = name("_baton._tcp.local.")
        let instance = try #require(service.prepending(label: #"Mom's TV. v2 \o/"#))
        #expect(instance.firstLabel == #"Mom's TV. v2 \o/"#)
        #expect(instance.description == #"Mom's TV\. v2 \\o/._baton._tcp.local."#)
        #expect(DNSName(instance.description) == instance)
        #expect(instance.parent == service)
        #expect(service.prepending(label: "") == nil)
        #expect(service.prepending(label: String(repeating: "x", count: 64)) == nil)
        #expect(service.prepending(label: String(repeating: "x", count: 63)) != nil)
    }

    @Test func labelsInitializerAndAppending() throws {
        let fromText = try #require(DNSName(labels: ["TV.1", "_baton", "_tcp", "local"]))
        #expect(fromText.description == #"TV\.1._baton._tcp.local."#)
        let fromBytes = try #require(DNSName(labels: [[0x41], ascii("local")]))
        #expect(fromBytes == name("a.local"))
        #expect(DNSName(labels: ["a", "", "local"]) == nil)

        let instance = try #require(name("tv").appending(name("_baton._tcp.local.")))
        #expect(instance == name("tv._baton._tcp.local."))
        #expect(name("local.").appending(.root) == name("local."))
    }

    @Test func rejectsMalformedText() {
        #expect(parsed("a..b") == nil)
        #expect(parsed(".a") == nil)
        #expect(parsed("a.b..") == nil)
        #expect(parsed(#"a\"#) == nil)
        #expect(parsed(#"\256.local"#) == nil)
        #expect(parsed(#"\12.local"#) == nil)
    }

    @Test func enforcesLabelAndNameLengths() throws {
        let label63 = String(repeating: "a", count: 63)
        #expect(parsed("\(label63).local") != nil)
        #expect(parsed("\(label63)a.local") == nil)

        // 63 + 63 + 63 + 61 label bytes, 4 length bytes and the root: exactly 255.
        let label61 = String(repeating: "d", count: 61)
        let longest = try #require(parsed("\(label63).\(label63).\(label63).\(label61)"))
        #expect(longest.wireLength == 255)
        #expect(parsed("\(label63).\(label63).\(label63).\(label61)d") == nil)
        #expect(parsed("x.\(label63).\(label63).\(label63).\(label61)") == nil)
        #expect(longest.prepending(label: "x") == nil)
        #expect(name("x").appending(longest) == nil)
        #expect(DNSName(labels: [label63, label63, label63, label61 + "d"]) == nil)
        // Escapes count as the one byte they stand for.
        let escaped = String(repeating: #"\."#, count: 63)
        #expect(parsed("\(escaped).local")?.firstLabelBytes?.count == 63)
    }

    @Test func subdomainsCompareWholeLabelsIgnoringCase() {
        let instance = name("TV._baton._tcp.local.")
        #expect(instance.isSubdomain(of: name("local.")))
        #expect(instance.isSubdomain(of: name("_BATON._tcp.LOCAL.")))
        #expect(instance.isSubdomain(of: instance))
        #expect(instance.isSubdomain(of: .root))
        #expect(!instance.isSubdomain(of: name("cal.")))
        #expect(!instance.isSubdomain(of: name("tcp.local.")))
        #expect(!name("local.").isSubdomain(of: instance))
        #expect(!name("xlocal.").isSubdomain(of: name("local.")))
    }

    @Test func describesBinaryLabelsSoTheyReadBack() throws {
        let binary = try #require(DNSName(labels: [[0x00, 0x41, 0x2E, 0xFF, 0x7F, 0x20], ascii("local")]))
        #expect(binary.description == #"\000A\.\255\127 .local."#)
        #expect(DNSName(binary.description)?.labels == binary.labels)

        // Valid UTF-8 stays readable; control characters are escaped.
        let text = try #require(DNSName(labels: ["é\ttab", "local"]))
        #expect(text.description == #"é\009tab.local."#)
        #expect(DNSName(text.description)?.labels == text.labels)
    }
}
