import BatonCore
import Testing

/// The error `JSON.parse` throws for `input`, or nil if it parses.
private func parseError(_ input: String) -> JSONError? {
    do {
        _ = try JSON.parse(input)
        return nil
    } catch {
        return error
    }
}

private func parseError(bytes: [UInt8]) -> JSONError? {
    do {
        _ = try JSON.parse(bytes)
        return nil
    } catch {
        return error
    }
}

/// A malformed document and what the user is told about it.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    var input: String
    var expected: String
    init(_ input: String, _ expected: String) {
        self.input = input
        self.expected = expected
    }
    var testDescription: String { String(reflecting: input) }
}

@Suite("JSON parser")
struct JSONParserTests {
    @Test func scalars() throws {
        #expect(try JSON.parse("null") == .null)
        #expect(try JSON.parse("true") == .bool(true))
        #expect(try JSON.parse("false") == .bool(false))
        #expect(try JSON.parse("0") == .int(0))
        #expect(try JSON.parse("-0") == .int(0))
        #expect(try JSON.parse("123") == .int(123))
        #expect(try JSON.parse("-123") == .int(-123))
        #expect(try JSON.parse("1.5") == .double(1.5))
        #expect(try JSON.parse("-0.0") == .double(-0.0))
        #expect(try JSON.parse("1e3") == .double(1000))
        #expect(try JSON.parse("1E-2") == .double(0.01))
        #expect(try JSON.parse("-1.5e+3") == .double(-1500))
        #expect(try JSON.parse("10.0") == .double(10))
        #expect(try JSON.parse("\"hi\"") == .string("hi"))
        #expect(try JSON.parse("\"\"") == .string(""))
    }

    @Test func surroundingWhitespaceIsIgnored() throws {
        #expect(try JSON.parse(" \t\r\n[ 1 , 2 ]\n\r\t ") == .array([.int(1), .int(2)]))
        #expect(try JSON.parse("{ \"a\" : { } , \"b\" : [ ] }") == .object([.init("a", .object([])), .init("b", .array([]))]))
    }

    @Test func int64Bounds() throws {
        #expect(try JSON.parse("9223372036854775807") == .int(.max))
        #expect(try JSON.parse("-9223372036854775808") == .int(.min))
        #expect(try JSON.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSON.parse("-9223372036854775809") == .double(-9_223_372_036_854_775_808))
        #expect(try JSON.parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
        // A fraction or exponent makes a double even when the value is whole.
        #expect(try JSON.parse("9223372036854775807.0") == .double(9_223_372_036_854_775_808))
        #expect(try JSON.parse("1e0") == .double(1))
    }

    @Test func largeAndSmallNumbers() throws {
        #expect(try JSON.parse("1.7976931348623157e308") == .double(.greatestFiniteMagnitude))
        #expect(try JSON.parse("-1.7976931348623157e308") == .double(-.greatestFiniteMagnitude))
        #expect(try JSON.parse("5e-324") == .double(.leastNonzeroMagnitude))
        #expect(try JSON.parse("2.2250738585072014e-308") == .double(.leastNormalMagnitude))
        // Below the smallest subnormal rounds to zero, as in every IEEE parser.
        #expect(try JSON.parse("1e-400") == .double(0))
        #expect(try JSON.parse("0.1") == .double(0.1))
        #expect(try JSON.parse("3.141592653589793") == .double(.pi))
        #expect(parseError("1e309")?.description == "line 1, column 1: number out of range")
        #expect(parseError("[0, -1e400]")?.description == "line 1, column 5: number out of range")
        let hugeInteger = "1" + String(repeating: "0", count: 400)
        #expect(parseError(hugeInteger)?.description == "line 1, column 1: number out of range")
    }

    @Test func stringEscapes() throws {
        #expect(try JSON.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(try JSON.parse(#""a\u0000b""#) == .string("a\u{0}b"))
        #expect(try JSON.parse(#""caf\u00e9 \u00C9""#) == .string("café É"))
        #expect(try JSON.parse(#""\u20AC""#) == .string("€"))
        #expect(try JSON.parse(#""x\u2028y""#) == .string("x\u{2028}y"))
    }

    @Test func surrogatePairs() throws {
        #expect(try JSON.parse(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(try JSON.parse(#""\ud834\udd1e clef""#) == .string("𝄞 clef"))
        #expect(try JSON.parse(#""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
        #expect(try JSON.parse(#""\uD800\uDC00""#) == .string("\u{10000}"))
    }

    @Test func rawUnicodeIsKept() throws {
        #expect(try JSON.parse("\"héllo wörld 😀 𝄞 日本\"") == .string("héllo wörld 😀 𝄞 日本"))
        #expect(try JSON.parse("{\"ключ\":\"значение\"}") == .object([.init("ключ", .string("значение"))]))
        // Escapes and raw text mixed in one string.
        #expect(try JSON.parse(#""日本\n語\u00e9😀""#) == .string("日本\n語é😀"))
    }

    @Test func objectsKeepMemberOrder() throws {
        let parsed = try JSON.parse(#"{"z":1,"a":2,"m":3}"#)
        #expect(parsed.objectValue?.map(\.key) == ["z", "a", "m"])
    }

    @Test func duplicateKeysKeepLastValueAtFirstPosition() throws {
        #expect(
            try JSON.parse(#"{"a":1,"b":2,"a":3}"#)
                == .object([.init("a", .int(3)), .init("b", .int(2))]))
        // Large objects use an index for the same rule.
        let keys = (0..<40).map { "k\($0)" }
        let body = keys.map { "\"\($0)\":0" }.joined(separator: ",")
        let parsed = try JSON.parse("{\(body),\"k3\":1,\"k39\":2,\"new\":3,\"k0\":4}")
        let members = try #require(parsed.objectValue)
        #expect(members.map(\.key) == keys + ["new"])
        #expect(parsed["k0"] == .int(4))
        #expect(parsed["k3"] == .int(1))
        #expect(parsed["k39"] == .int(2))
        #expect(parsed["new"] == .int(3))
        #expect(parsed["k1"] == .int(0))
    }

    @Test func nestedDocument() throws {
        let text = """
            {"name": "baton", "tags": ["a", "b"], "limits": {"memory": 64, "ratio": 0.5},
             "ok": true, "none": null, "rows": [[1, 2], [], [{"x": -1}]]}
            """
        let expected: JSON = .object([
            .init("name", .string("baton")),
            .init("tags", .array([.string("a"), .string("b")])),
            .init("limits", .object([.init("memory", .int(64)), .init("ratio", .double(0.5))])),
            .init("ok", .bool(true)),
            .init("none", .null),
            .init("rows", .array([.array([.int(1), .int(2)]), .array([]), .array([.object([.init("x", .int(-1))])])])),
        ])
        #expect(try JSON.parse(text) == expected)
    }

    @Test func nestingUpTo512IsAccepted() throws {
        let text = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        var value = try JSON.parse(text)
        var depth = 0
        while case .array(let elements) = value {
            depth += 1
            value = elements.first ?? .null
        }
        #expect(depth == 512)
        let objects = String(repeating: "{\"a\":", count: 511) + "{}" + String(repeating: "}", count: 511)
        #expect(throws: Never.self) { try JSON.parse(objects) }
    }

    @Test func nestingBeyond512IsRejected() {
        let arrays = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        let error = parseError(arrays)
        #expect(error?.description == "line 1, column 513: nesting deeper than 512 levels")
        #expect(error?.offset == 512)
        let objects = String(repeating: "{\"a\":", count: 512) + "{}" + String(repeating: "}", count: 512)
        #expect(parseError(objects)?.description == "line 1, column 2561: nesting deeper than 512 levels")
        // Far deeper input fails the same way instead of exhausting the stack.
        let deep = String(repeating: "[", count: 100_000)
        #expect(parseError(deep)?.description == "line 1, column 513: nesting deeper than 512 levels")
    }

    @Test func parsesAnyByteCollection() throws {
        let bytes: [UInt8] = Array(#"{"a":[1,"x"]}"#.utf8)
        let expected: JSON = .object([.init("a", .array([.int(1), .string("x")]))])
        #expect(try JSON.parse(bytes) == expected)
        #expect(try JSON.parse(bytes[...]) == expected)
        // Not contiguous: exercises the copying path.
        #expect(try JSON.parse(bytes.lazy.map { $0 }) == expected)
        #expect(try JSON.parse(Substring(#"{"a":[1,"x"]}"#).utf8) == expected)
    }

    static let malformed: [MalformedCase] = [
        MalformedCase("", "line 1, column 1: unexpected end of input"),
        MalformedCase("   ", "line 1, column 4: unexpected end of input"),
        MalformedCase("\n\n", "line 3, column 1: unexpected end of input"),
        MalformedCase("}", "line 1, column 1: unexpected character '}'"),
        MalformedCase("]", "line 1, column 1: unexpected character ']'"),
        MalformedCase(":", "line 1, column 1: unexpected character ':'"),
        MalformedCase("[1,,2]", "line 1, column 4: unexpected character ','"),
        MalformedCase("[,1]", "line 1, column 2: unexpected character ','"),
        MalformedCase("[1,]", "line 1, column 4: trailing comma in array"),
        MalformedCase("[1, ]", "line 1, column 5: trailing comma in array"),
        MalformedCase("{\"a\":1,}", "line 1, column 8: trailing comma in object"),
        MalformedCase("[1 2]", "line 1, column 4: expected ',' or ']' after array element"),
        MalformedCase("[1}", "line 1, column 3: expected ',' or ']' after array element"),
        MalformedCase("{\"a\":1 \"b\":2}", "line 1, column 8: expected ',' or '}' after object member"),
        MalformedCase("{\"a\":1]", "line 1, column 7: expected ',' or '}' after object member"),
        MalformedCase("{\"a\" 1}", "line 1, column 6: expected ':' after object key"),
        MalformedCase("{\"a\"=1}", "line 1, column 5: expected ':' after object key"),
        MalformedCase("{1:2}", "line 1, column 2: expected string key or '}'"),
        MalformedCase("{a:1}", "line 1, column 2: expected string key or '}'"),
        MalformedCase("{'a':1}", "line 1, column 2: expected string key or '}'"),
        MalformedCase("{\"a\":1,2}", "line 1, column 8: expected string key"),
        MalformedCase("{\"a\":}", "line 1, column 6: unexpected character '}'"),
        MalformedCase("[1", "line 1, column 3: unexpected end of input"),
        MalformedCase("[1,", "line 1, column 4: unexpected end of input"),
        MalformedCase("[", "line 1, column 2: unexpected end of input"),
        MalformedCase("{", "line 1, column 2: unexpected end of input"),
        MalformedCase("{\"a\"", "line 1, column 5: unexpected end of input"),
        MalformedCase("{\"a\":", "line 1, column 6: unexpected end of input"),
        MalformedCase("{\"a\":1", "line 1, column 7: unexpected end of input"),
        MalformedCase("{\"a\":1,", "line 1, column 8: unexpected end of input"),
        MalformedCase("\"abc", "line 1, column 1: unterminated string"),
        MalformedCase("[\"a\", \"bc", "line 1, column 7: unterminated string"),
        MalformedCase("\"abc\\", "line 1, column 1: unterminated string"),
        MalformedCase("\"a\\nb", "line 1, column 1: unterminated string"),
        MalformedCase("[\"a\\q\"]", "line 1, column 4: invalid escape '\\q'"),
        MalformedCase("\"\\x41\"", "line 1, column 2: invalid escape '\\x'"),
        MalformedCase("\"\\'\"", "line 1, column 2: invalid escape '\\''"),
        MalformedCase("\"\\U0041\"", "line 1, column 2: invalid escape '\\U'"),
        MalformedCase("\"\\\u{1}\"", "line 1, column 2: invalid escape: '\\' followed by U+0001"),
        MalformedCase("\"\\é\"", "line 1, column 2: invalid escape: '\\' followed by U+00E9"),
        MalformedCase("\"\\u12G4\"", "line 1, column 2: expected 4 hex digits after '\\u'"),
        MalformedCase("\"\\u123\"", "line 1, column 2: expected 4 hex digits after '\\u'"),
        MalformedCase("\"\\u12", "line 1, column 1: unterminated string"),
        MalformedCase("\"\\uD800\"", "line 1, column 2: unpaired surrogate '\\uD800'"),
        MalformedCase("\"\\udbff\"", "line 1, column 2: unpaired surrogate '\\uDBFF'"),
        MalformedCase("\"\\uDC00\"", "line 1, column 2: unpaired surrogate '\\uDC00'"),
        MalformedCase("\"ab\\uDFFF\\uD800\"", "line 1, column 4: unpaired surrogate '\\uDFFF'"),
        MalformedCase("\"\\uD800\\u0041\"", "line 1, column 2: unpaired surrogate '\\uD800'"),
        MalformedCase("\"\\uD800\\uD800\"", "line 1, column 2: unpaired surrogate '\\uD800'"),
        MalformedCase("\"\\uD800x\"", "line 1, column 2: unpaired surrogate '\\uD800'"),
        MalformedCase("\"\\uD800\\n\"", "line 1, column 2: unpaired surrogate '\\uD800'"),
        MalformedCase("\"\\uD800\\uZZZZ\"", "line 1, column 8: expected 4 hex digits after '\\u'"),
        MalformedCase("\"a\nb\"", "line 1, column 3: unescaped control character U+000A in string"),
        MalformedCase("\"a\tb\"", "line 1, column 3: unescaped control character U+0009 in string"),
        MalformedCase("\"\u{0}\"", "line 1, column 2: unescaped control character U+0000 in string"),
        MalformedCase("\"\\n\u{1F}\"", "line 1, column 4: unescaped control character U+001F in string"),
        MalformedCase("01", "line 1, column 1: leading zeros are not allowed"),
        MalformedCase("[00]", "line 1, column 2: leading zeros are not allowed"),
        MalformedCase("-01", "line 1, column 2: leading zeros are not allowed"),
        MalformedCase("-", "line 1, column 2: expected digit after '-'"),
        MalformedCase("-a", "line 1, column 2: expected digit after '-'"),
        MalformedCase("-Infinity", "line 1, column 2: expected digit after '-'"),
        MalformedCase("- 1", "line 1, column 2: expected digit after '-'"),
        MalformedCase("1.", "line 1, column 3: expected digit after '.'"),
        MalformedCase("1.e5", "line 1, column 3: expected digit after '.'"),
        MalformedCase("[1.]", "line 1, column 4: expected digit after '.'"),
        MalformedCase("1e", "line 1, column 3: expected digit in exponent"),
        MalformedCase("1e+", "line 1, column 4: expected digit in exponent"),
        MalformedCase("1E-x", "line 1, column 4: expected digit in exponent"),
        MalformedCase(".5", "line 1, column 1: unexpected character '.'"),
        MalformedCase("+1", "line 1, column 1: unexpected character '+'"),
        MalformedCase("0x10", "line 1, column 2: trailing characters after JSON value"),
        MalformedCase("1.5.2", "line 1, column 4: trailing characters after JSON value"),
        MalformedCase("tru", "line 1, column 1: invalid literal 'tru'"),
        MalformedCase("True", "line 1, column 1: invalid literal 'True'"),
        MalformedCase("NULL", "line 1, column 1: invalid literal 'NULL'"),
        MalformedCase("nulls", "line 1, column 1: invalid literal 'nulls'"),
        MalformedCase("true1", "line 1, column 1: invalid literal 'true1'"),
        MalformedCase("NaN", "line 1, column 1: invalid literal 'NaN'"),
        MalformedCase("[Infinity]", "line 1, column 2: invalid literal 'Infinity'"),
        MalformedCase("{\"a\": undefined}", "line 1, column 7: invalid literal 'undefined'"),
        MalformedCase(
            String(repeating: "x", count: 40),
            "line 1, column 1: invalid literal '\(String(repeating: "x", count: 32))…'"),
        MalformedCase("1 2", "line 1, column 3: trailing characters after JSON value"),
        MalformedCase("{} x", "line 1, column 4: trailing characters after JSON value"),
        MalformedCase("{\"a\":1}}", "line 1, column 8: trailing characters after JSON value"),
        MalformedCase("[]\n[]", "line 2, column 1: trailing characters after JSON value"),
        MalformedCase("\"a\" \"b\"", "line 1, column 5: trailing characters after JSON value"),
        MalformedCase("// note\n1", "line 1, column 1: unexpected character '/'"),
        MalformedCase("[1 /* note */]", "line 1, column 4: expected ',' or ']' after array element"),
        MalformedCase("'a'", "line 1, column 1: unexpected character '''"),
        MalformedCase("\u{FEFF}{}", "line 1, column 1: unexpected character U+FEFF"),
        MalformedCase("\u{1}", "line 1, column 1: unexpected character U+0001"),
        MalformedCase("\u{7F}", "line 1, column 1: unexpected character U+007F"),
        MalformedCase("é", "line 1, column 1: unexpected character U+00E9"),
        MalformedCase("[\u{A0}1]", "line 1, column 2: unexpected character U+00A0"),
        MalformedCase("{\n  \"a\": 1,\n  \"b\": ]\n}", "line 3, column 8: unexpected character ']'"),
        MalformedCase("[\n  1,\n]", "line 3, column 1: trailing comma in array"),
        MalformedCase("[\r\n  1\r\n  2]", "line 3, column 3: expected ',' or ']' after array element"),
        // Columns count characters, not bytes.
        MalformedCase("[\"😀é\", x]", "line 1, column 8: invalid literal 'x'"),
        MalformedCase("{\"日本\": 1 2}", "line 1, column 10: expected ',' or '}' after object member"),
    ]

    @Test(arguments: malformed)
    func malformedDocumentIsRejected(_ testCase: MalformedCase) {
        #expect(parseError(testCase.input)?.description == testCase.expected)
    }

    @Test func errorCarriesOffsetLineAndColumn() {
        let error = parseError("{\n  \"ключ\": tru\n}")
        #expect(error == JSONError(offset: 16, line: 2, column: 11, message: "invalid literal 'tru'"))
        #expect(parseError("[\"😀\", x]")?.offset == 9)
        #expect(parseError("[1,")?.offset == 3)
        #expect(JSONError(offset: 0, line: 4, column: 2, message: "boom").description == "line 4, column 2: boom")
    }

    @Test func invalidUTF8IsRejected() {
        let quote = UInt8(ascii: "\"")
        let cases: [(bytes: [UInt8], expected: String)] = [
            ([quote, 0xFF, quote], "line 1, column 2: invalid UTF-8"),
            ([quote, 0x61, 0x80, quote], "line 1, column 3: invalid UTF-8"),
            // Overlong encodings.
            ([quote, 0xC0, 0x80, quote], "line 1, column 2: invalid UTF-8"),
            ([quote, 0xC1, 0xBF, quote], "line 1, column 2: invalid UTF-8"),
            ([quote, 0xE0, 0x80, 0x80, quote], "line 1, column 2: invalid UTF-8"),
            ([quote, 0xF0, 0x80, 0x80, 0x80, quote], "line 1, column 2: invalid UTF-8"),
            // UTF-16 surrogate encoded in UTF-8.
            ([quote, 0xED, 0xA0, 0x80, quote], "line 1, column 2: invalid UTF-8"),
            // Beyond U+10FFFF.
            ([quote, 0xF4, 0x90, 0x80, 0x80, quote], "line 1, column 2: invalid UTF-8"),
            ([quote, 0xF5, 0x80, 0x80, 0x80, quote], "line 1, column 2: invalid UTF-8"),
            // Truncated sequences, inside and at the end of the string.
            ([quote, 0xE2, 0x82, quote], "line 1, column 2: invalid UTF-8"),
            ([quote, 0xE2, 0x82], "line 1, column 2: invalid UTF-8"),
            // After an escape, on the slow path.
            ([quote, UInt8(ascii: "\\"), UInt8(ascii: "n"), 0xFE, quote], "line 1, column 4: invalid UTF-8"),
            // Outside strings.
            ([0xFF], "line 1, column 1: invalid UTF-8"),
            ([UInt8(ascii: "["), 0xC3], "line 1, column 2: invalid UTF-8"),
            // Escaped backslash then a bad byte.
            ([quote, UInt8(ascii: "\\"), 0xFF, quote], "line 1, column 3: invalid UTF-8"),
        ]
        for (bytes, expected) in cases {
            #expect(parseError(bytes: bytes)?.description == expected, "\(bytes)")
        }
        #expect(parseError(bytes: [quote, 0x61, 0x80, quote])?.offset == 2)
        // Valid 2-, 3- and 4-byte sequences at the edges of their ranges.
        let valid: [UInt8] = [quote, 0xC2, 0x80, 0xDF, 0xBF, 0xE0, 0xA0, 0x80, 0xED, 0x9F, 0xBF, 0xEE, 0x80, 0x80,
                              0xF0, 0x90, 0x80, 0x80, 0xF4, 0x8F, 0xBF, 0xBF, quote]
        #expect(
            (try? JSON.parse(valid)) == .string("\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{10000}\u{10FFFF}"))
    }

    @Test func subscriptsAndAccessors() throws {
        let doc = try JSON.parse(#"{"s":"x","i":7,"d":2.5,"b":false,"a":[10,20],"o":{"k":null}}"#)
        #expect(doc["s"]?.stringValue == "x")
        #expect(doc["i"]?.intValue == 7)
        #expect(doc["i"]?.doubleValue == 7.0)
        #expect(doc["d"]?.doubleValue == 2.5)
        #expect(doc["d"]?.intValue == nil)
        #expect(doc["b"]?.boolValue == false)
        #expect(doc["a"]?[1] == .int(20))
        #expect(doc["a"]?[2] == nil)
        #expect(doc["a"]?[-1] == nil)
        #expect(doc["a"]?.arrayValue == [.int(10), .int(20)])
        #expect(doc["o"]?["k"] == .null)
        #expect(doc["o"]?.objectValue == [JSON.Member("k", .null)])
        #expect(doc["missing"] == nil)
        #expect(doc[0] == nil)
        #expect(doc["a"]?["s"] == nil)
        #expect(doc["s"]?.intValue == nil)
        #expect(doc["s"]?.boolValue == nil)
        #expect(doc["s"]?.arrayValue == nil)
        #expect(doc["s"]?.objectValue == nil)
        #expect(doc["b"]?.stringValue == nil)
        #expect(doc.stringValue == nil)
        #expect(JSON.null.doubleValue == nil)
    }
}
