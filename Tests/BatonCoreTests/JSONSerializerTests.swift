import BatonCore
import Testing

@Suite("JSON serializer")
struct JSONSerializerTests {
    static let sample: JSON = .object([
        .init("name", .string("baton")),
        .init("count", .int(3)),
        .init("ratio", .double(0.5)),
        .init("flags", .array([.bool(true), .null, .bool(false)])),
        .init("nested", .object([.init("empty", .object([])), .init("list", .array([]))])),
        .init("rows", .array([.array([.int(1), .int(-2)]), .object([.init("x", .string("y"))])])),
    ])

    @Test func compact() {
        #expect(
            JSON.object([.init("a", .int(1)), .init("b", .array([.bool(true), .null]))]).serialized()
                == #"{"a":1,"b":[true,null]}"#)
        #expect(
            Self.sample.serialized()
                == #"{"name":"baton","count":3,"ratio":0.5,"flags":[true,null,false],"nested":{"empty":{},"list":[]},"rows":[[1,-2],{"x":"y"}]}"#
        )
    }

    @Test func pretty() {
        let expected = """
            {
              "name": "baton",
              "count": 3,
              "ratio": 0.5,
              "flags": [
                true,
                null,
                false
              ],
              "nested": {
                "empty": {},
                "list": []
              },
              "rows": [
                [
                  1,
                  -2
                ],
                {
                  "x": "y"
                }
              ]
            }
            """
        #expect(Self.sample.serialized(pretty: true) == expected)
    }

    @Test func scalarsAndEmptyContainers() {
        #expect(JSON.null.serialized() == "null")
        #expect(JSON.bool(true).serialized(pretty: true) == "true")
        #expect(JSON.array([]).serialized() == "[]")
        #expect(JSON.array([]).serialized(pretty: true) == "[]")
        #expect(JSON.object([]).serialized() == "{}")
        #expect(JSON.object([]).serialized(pretty: true) == "{}")
        #expect(JSON.array([.array([])]).serialized(pretty: true) == "[\n  []\n]")
    }

    @Test func sortKeys() {
        let doc: JSON = .object([
            .init("b", .int(1)), .init("a", .object([.init("z", .null), .init("y", .null)])), .init("B", .int(2)),
            .init("é", .int(3)), .init("", .int(4)),
        ])
        #expect(doc.serialized(sortKeys: true) == #"{"":4,"B":2,"a":{"y":null,"z":null},"b":1,"é":3}"#)
        #expect(doc.serialized() == #"{"b":1,"a":{"z":null,"y":null},"B":2,"é":3,"":4}"#)
        #expect(
            doc.serialized(pretty: true, sortKeys: true)
                == "{\n  \"\": 4,\n  \"B\": 2,\n  \"a\": {\n    \"y\": null,\n    \"z\": null\n  },\n  \"b\": 1,\n  \"é\": 3\n}")
    }

    static let integerCases: [(Int64, String)] = [
        (0, "0"), (1, "1"), (-1, "-1"), (1_234_567_890, "1234567890"),
        (.max, "9223372036854775807"), (.min, "-9223372036854775808"),
    ]

    @Test(arguments: integerCases)
    func integers(_ value: Int64, _ text: String) {
        #expect(JSON.int(value).serialized() == text)
    }

    static let doubleCases: [(Double, String)] = [
        (1.0, "1.0"), (0.0, "0.0"), (-0.0, "-0.0"), (0.1, "0.1"), (0.5, "0.5"), (-2.25, "-2.25"),
        (1e100, "1e+100"), (1e16, "1e+16"), (123_456_789.0, "123456789.0"), (1e-7, "1e-07"),
        (.leastNonzeroMagnitude, "5e-324"), (.greatestFiniteMagnitude, "1.7976931348623157e+308"),
        (1.0 / 3.0, "0.3333333333333333"),
    ]

    @Test(arguments: doubleCases)
    func doubles(_ value: Double, _ text: String) throws {
        #expect(JSON.double(value).serialized() == text)
        // Always read back as the same double, never as an integer.
        #expect(try JSON.parse(text) == .double(value))
    }

    @Test func stringEscapes() {
        #expect(JSON.string("say \"hi\" \\ bye").serialized() == #""say \"hi\" \\ bye""#)
        #expect(JSON.string("a\nb\rc\td\u{8}e\u{C}f").serialized() == #""a\nb\rc\td\be\ff""#)
        #expect(JSON.string("\u{0}\u{1}\u{1F}").serialized() == #""\u0000\u0001\u001f""#)
        #expect(JSON.string("\u{7F}/").serialized() == "\"\u{7F}/\"")
        #expect(JSON.string("café 😀 日本").serialized() == "\"café 😀 日本\"")
        #expect(JSON.string("a\u{2028}b\u{2029}c").serialized() == #""a\u2028b\u2029c""#)
        // Other characters sharing U+2028's lead byte are written as they are.
        #expect(JSON.string("€…\u{2027}\u{202A}").serialized() == "\"€…\u{2027}\u{202A}\"")
        #expect(JSON.string("\u{2028}").serialized() == #""\u2028""#)
        #expect(JSON.object([.init("k\"\n", .string(""))]).serialized() == #"{"k\"\n":""}"#)
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let controls = String(String.UnicodeScalarView((0..<0x20).compactMap(Unicode.Scalar.init)))
        let text = JSON.string(controls).serialized()
        #expect(!text.utf8.contains { $0 < 0x20 })
        #expect(try JSON.parse(text) == .string(controls))
    }

    static let roundTripDocuments: [JSON] = [
        sample,
        .null,
        .string(""),
        .string("\"\\/\u{0}\u{1F}\u{7F}\u{2028}\u{2029}é😀\u{10FFFF}"),
        .array([.int(.min), .int(.max), .int(0), .double(-0.0), .double(0.1), .double(1e-300), .double(1e300)]),
        .array([.double(.greatestFiniteMagnitude), .double(.leastNonzeroMagnitude), .double(.pi), .double(-1.5)]),
        .object([.init("", .null), .init(" ", .array([.object([])])), .init("日本", .object([.init("a", .array([]))]))]),
        .array([.array([.array([.array([.string("deep")])])])]),
    ]

    @Test(arguments: roundTripDocuments)
    func roundTrip(_ doc: JSON) throws {
        #expect(try JSON.parse(doc.serialized()) == doc)
        #expect(try JSON.parse(doc.serialized(pretty: true)) == doc)
        let sorted = try JSON.parse(doc.serialized(sortKeys: true))
        #expect(sorted.serialized() == doc.serialized(sortKeys: true))
    }

    @Test func canonicalTextRoundTrips() throws {
        let texts = [
            #"{"a":1,"b":[true,null],"c":{"d":-2.5,"e":"x\ny"}}"#,
            #"[1.0,1e+100,-9223372036854775808,"\u0001\u2028"]"#,
            "[]", "{}", "\"\"", "0",
        ]
        for text in texts {
            #expect(try JSON.parse(text).serialized() == text)
        }
    }
}
