import BatonCore
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The text a user sees when `value` has no JSON form, or nil when it has one.
private func jsonError(_ value: Value, path: String = "value") -> String? {
    do {
        _ = try value.json(path: path)
        return nil
    } catch {
        return error.description
    }
}

@Suite("Value to JSON")
struct ValueJSONTests {
    @Test func everyKind() throws {
        #expect(try Value.string("héllo").json() == .string("héllo"))
        #expect(try Value.int(-42).json() == .int(-42))
        #expect(try Value.int(.max).json() == .int(.max))
        #expect(try Value.double(2.5).json() == .double(2.5))
        #expect(try Value.double(3).json() == .double(3))
        #expect(try Value.bool(true).json() == .bool(true))
        #expect(try Value.date(Date(timeIntervalSince1970: 1_795_255_200.25)).json() == .string("2026-11-21T10:00:00.250Z"))
        #expect(try Value.date(Date(timeIntervalSince1970: -0.001)).json() == .string("1969-12-31T23:59:59.999Z"))
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(try Value.uuid(uuid).json() == .string("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))
        #expect(try Value.bytes(Array("foobar".utf8)).json() == .string("Zm9vYmFy"))
        #expect(try Value.bytes([0xFB, 0xFF]).json() == .string("+/8="))
        #expect(try Value.bytes([]).json() == .string(""))
        #expect(try Value.array([1, 2]).json() == .array([.int(1), .int(2)]))
        #expect(try Value.array([]).json() == .array([]))
        #expect(try Value.dictionary([:]).json() == .object([]))
    }

    @Test func dictionaryMembersAreSortedByKey() throws {
        let value: Value = ["b": 1, "a": ["z": true, "y": [1.5]], "B": "x", "": 0]
        let expected: JSON = .object([
            .init("", .int(0)),
            .init("B", .string("x")),
            .init("a", .object([.init("y", .array([.double(1.5)])), .init("z", .bool(true))])),
            .init("b", .int(1)),
        ])
        #expect(try value.json() == expected)
        #expect(try value.json().serialized() == #"{"":0,"B":"x","a":{"y":[1.5],"z":true},"b":1}"#)
    }

    @Test func nonFiniteDoublesAreRejectedWithTheirPath() {
        #expect(jsonError(.double(.nan)) == "value: NaN cannot be written as JSON")
        #expect(jsonError(.double(.infinity)) == "value: infinity cannot be written as JSON")
        #expect(jsonError(.double(-.infinity)) == "value: infinity cannot be written as JSON")
        #expect(jsonError(["samples": [1.0, .double(.nan)]]) == "value.samples[2]: NaN cannot be written as JSON")
        #expect(
            jsonError(["ok": 1.0, "my key": [["x": .double(.infinity)]]])
                == #"value["my key"][1].x: infinity cannot be written as JSON"#)
        #expect(jsonError([.double(.nan)], path: "reply") == "reply[1]: NaN cannot be written as JSON")
        // The first in key order is reported.
        #expect(
            jsonError(["b": .double(.nan), "a": .double(.infinity)]) == "value.a: infinity cannot be written as JSON")
        #expect(jsonError(["a": 1.0, "b": [0.0, -1e308]]) == nil)
    }
}
