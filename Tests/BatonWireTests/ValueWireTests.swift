import BatonCore
import BatonWire
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `value` sent and read back.
private func roundTrip(_ value: Value) throws -> Value {
    try Value(wire: Baton_V1_Value(value), path: "message")
}

/// The text of the error reading `wire` gives, or nil if it reads.
private func refusal(_ wire: Baton_V1_Value, path: String = "message") -> String? {
    do {
        _ = try Value(wire: wire, path: path)
        return nil
    } catch {
        return error.description
    }
}

private func refusal(_ wire: Baton_V1_Dictionary, path: String = "message") -> String? {
    do {
        _ = try ValueDictionary(wire: wire, path: path)
        return nil
    } catch {
        return error.description
    }
}

private func wireValue(_ kind: Baton_V1_Value.OneOf_Kind?) -> Baton_V1_Value {
    var value = Baton_V1_Value()
    value.kind = kind
    return value
}

private func wireArray(_ elements: [Baton_V1_Value]) -> Baton_V1_Value {
    var array = Baton_V1_Array()
    array.elements = elements
    return wireValue(.arrayValue(array))
}

private func wireDictionary(_ entries: [(String, Baton_V1_Value?)]) -> Baton_V1_Dictionary {
    var dictionary = Baton_V1_Dictionary()
    dictionary.entries = entries.map { key, value in
        var entry = Baton_V1_Dictionary.Entry()
        entry.key = key
        if let value { entry.value = value }
        return entry
    }
    return dictionary
}

/// `levels` arrays nested in one another around `1`.
private func nestedArrays(_ levels: Int) -> Value {
    var value: Value = 1
    for _ in 0..<levels { value = .array([value]) }
    return value
}

@Suite("Value on the wire")
struct ValueWireTests {
    static let scalars: [Value] = [
        "", "plain", "héllo wörld — ☃ 🌍 𝄞 \u{0}", 0, 1, -1, .int(.max), .int(.min), 0.0, -0.0, 3.141592653589793,
        .double(.infinity), .double(-.infinity), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude),
        true, false, .date(Date(timeIntervalSince1970: 0)), .date(Date(timeIntervalSince1970: 1_700_000_000.123456)),
        .date(Date(timeIntervalSince1970: -1.5)), .date(Date(timeIntervalSince1970: -2_208_988_800)),
        .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!), .uuid(UUID()), .bytes([]),
        .bytes((0...255).map { UInt8($0) }),
    ]

    @Test(arguments: scalars)
    func scalarRoundTrips(_ value: Value) throws {
        #expect(try roundTrip(value) == value)
    }

    @Test func eachKindUsesItsOwnWireField() {
        let cases: [(Value, Baton_V1_Value.OneOf_Kind)] = [
            ("s", .stringValue("s")), (-3, .intValue(-3)), (2.5, .doubleValue(2.5)), (true, .boolValue(true)),
            (.date(Date(timeIntervalSince1970: -1)), .dateValue(-1_000_000)), (.bytes([1, 2]), .bytesValue(Data([1, 2]))),
            ([], .arrayValue(Baton_V1_Array())), ([:], .dictionaryValue(Baton_V1_Dictionary())),
        ]
        for (value, kind) in cases {
            #expect(Baton_V1_Value(value).kind == kind)
        }
    }

    @Test func nanRoundTripsAsNaN() throws {
        let back = try roundTrip(.double(.nan))
        guard case .double(let d) = back else {
            Issue.record("expected a double, got \(back)")
            return
        }
        #expect(d.isNaN)
        #expect(d.bitPattern == Double.nan.bitPattern)
    }

    @Test func emptyArrayAndEmptyDictionaryStayDistinct() throws {
        #expect(try roundTrip([]) == .array([]))
        #expect(try roundTrip([:]) == .dictionary([:]))
        #expect(try roundTrip(["a": [], "d": [:]]) == ["a": [], "d": [:]])
    }

    @Test func nestedValuesRoundTrip() throws {
        let value: Value = [
            "name": "Küche", "volume": 0.5, "muted": false, "count": 3,
            "tags": ["a", "b", ""], "matrix": [[1, 2], [3], []],
            "people": [["id": .uuid(UUID()), "born": .date(Date(timeIntervalSince1970: -86_400.25))], [:]],
            "blob": .bytes([0, 255]), "": ["deep": [["deeper": [true]]]],
        ]
        #expect(try roundTrip(value) == value)
        #expect(try roundTrip(nestedArrays(30)) == nestedArrays(30))
    }

    @Test func dictionaryKeepsMemberOrder() throws {
        var members = ValueDictionary()
        for key in ["zeta", "alpha", "mid", ""] { members.appendUnchecked(key, .string(key)) }
        let wire = Baton_V1_Dictionary(members)
        #expect(wire.entries.map(\.key) == ["zeta", "alpha", "mid", ""])
        #expect(try ValueDictionary(wire: wire).keys == ["zeta", "alpha", "mid", ""])
    }

    @Test func int64BoundsUseZigZag() {
        #expect(Baton_V1_Value(.int(.min)).intValue == .min)
        #expect(Baton_V1_Value(.int(.max)).intValue == .max)
    }

    @Test func datesAreMicrosecondsSince1970() {
        func micros(_ seconds: Double) -> Int64 { Baton_V1_Value(.date(Date(timeIntervalSince1970: seconds))).dateValue }
        #expect(micros(0) == 0)
        #expect(micros(1) == 1_000_000)
        #expect(micros(-86_400.5) == -86_400_500_000)
        #expect(micros(1_700_000_000.123456) == 1_700_000_000_123_456)
        #expect(micros(-2_208_988_800) == -2_208_988_800_000_000)
    }

    @Test func datesRoundToTheNearestMicrosecond() {
        func micros(sinceReference seconds: Double) -> Int64 {
            Baton_V1_Value(.date(Date(timeIntervalSinceReferenceDate: seconds))).dateValue - 978_307_200_000_000
        }
        #expect(micros(sinceReference: 0.000_001_4) == 1)
        #expect(micros(sinceReference: 0.000_001_6) == 2)
        #expect(micros(sinceReference: -0.000_001_6) == -2)
        #expect(micros(sinceReference: -0.000_001_4) == -1)
    }

    @Test func wireDatesBecomeDates() throws {
        #expect(try Value(wire: wireValue(.dateValue(-1_500_000)), path: "m") == .date(Date(timeIntervalSince1970: -1.5)))
        #expect(try Value(wire: wireValue(.dateValue(0)), path: "m") == .date(Date(timeIntervalSince1970: 0)))
        // Extremes do not trap.
        _ = try Value(wire: wireValue(.dateValue(.max)), path: "m")
        _ = try Value(wire: wireValue(.dateValue(.min)), path: "m")
        #expect(Baton_V1_Value(.date(Date(timeIntervalSince1970: .infinity))).dateValue == .max)
        #expect(Baton_V1_Value(.date(Date(timeIntervalSince1970: -.infinity))).dateValue == .min)
    }

    @Test func uuidBytesAreInTextOrder() {
        let uuid = UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!
        #expect(Baton_V1_Value(.uuid(uuid)).uuidValue == Data([
            0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF,
        ]))
    }

    // MARK: refusals

    @Test func valueWithNoKindIsRefused() {
        #expect(refusal(wireValue(nil)) == "message: value has no kind")
        #expect(refusal(wireValue(nil), path: "data") == "data: value has no kind")
    }

    @Test func nestedValueWithNoKindNamesItsPath() {
        let items = wireArray([wireValue(.intValue(1)), wireValue(nil)])
        let wire = wireDictionary([("items", items)])
        #expect(refusal(wire) == "message.items[2]: value has no kind")
        #expect(refusal(wireValue(.dictionaryValue(wire))) == "message.items[2]: value has no kind")
    }

    @Test func entryWithoutValueHasNoKind() {
        #expect(refusal(wireDictionary([("ok", wireValue(.boolValue(true))), ("odd key", nil)]))
            == #"message["odd key"]: value has no kind"#)
    }

    @Test func uuidOfWrongLengthIsRefused() {
        let wire = wireDictionary([("id", wireValue(.uuidValue(Data(repeating: 7, count: 15))))])
        #expect(refusal(wire) == "message.id: uuid must be 16 bytes, got 15")
        #expect(refusal(wireValue(.uuidValue(Data(repeating: 7, count: 17)))) == "message: uuid must be 16 bytes, got 17")
        #expect(refusal(wireValue(.uuidValue(Data()))) == "message: uuid must be 16 bytes, got 0")
    }

    @Test func mixedArrayIsRefused() {
        let items = wireArray([wireValue(.intValue(1)), wireValue(.stringValue("two"))])
        #expect(refusal(wireDictionary([("items", items)])) == "message.items[2]: expected integer like items[1], got string")
        let numbers = wireArray([wireValue(.intValue(1)), wireValue(.intValue(2)), wireValue(.doubleValue(3))])
        #expect(refusal(numbers) == "message[3]: expected integer like message[1], got number")
    }

    @Test func repeatedKeyIsRefused() {
        let wire = wireDictionary([
            ("name", wireValue(.stringValue("a"))), ("x", wireValue(.intValue(1))), ("name", wireValue(.stringValue("b"))),
        ])
        #expect(refusal(wire) == "message.name: duplicate key")
        let nested = wireDictionary([("inner", wireValue(.dictionaryValue(wire)))])
        #expect(refusal(nested) == "message.inner.name: duplicate key")
    }

    @Test func repeatedKeyAmongManyIsRefused() {
        var entries = (0..<40).map { ("k\($0)", Optional(wireValue(.intValue(Int64($0))))) }
        entries.append(("k17", wireValue(.intValue(0))))
        #expect(refusal(wireDictionary(entries)) == "message.k17: duplicate key")
    }

    @Test func nestingDeeperThan30IsRefused() {
        let ok = Baton_V1_Value(nestedArrays(30))
        #expect(refusal(ok) == nil)
        let deep = Baton_V1_Value(nestedArrays(31))
        #expect(refusal(deep) == "message" + String(repeating: "[1]", count: 30) + ": nested deeper than 30 levels")
        var dictionary: ValueDictionary = ["leaf": 1]
        for _ in 0..<30 { dictionary = ["d": .dictionary(dictionary)] }
        #expect(
            refusal(Baton_V1_Dictionary(dictionary))
                == "message" + String(repeating: ".d", count: 30) + ": nested deeper than 30 levels")
    }

    @Test func customMaxDepthIsHonoured() {
        #expect(throws: ValueError(path: "m[1][1]", reason: "nested deeper than 2 levels")) {
            try Value(wire: Baton_V1_Value(nestedArrays(3)), path: "m", maxDepth: 2)
        }
    }

    @Test func dictionaryRoundTripsUnderItsRoot() throws {
        let members: ValueDictionary = ["a": 1, "b": ["c": [1.5, 2.5]]]
        #expect(try ValueDictionary(wire: Baton_V1_Dictionary(members)) == members)
        #expect(try ValueDictionary(wire: Baton_V1_Dictionary()) == [:])
    }
}
