import BatonCore
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The text a user sees when `value` fails validation, or nil when it passes.
private func validationError(_ value: Value, path: String = "message", maxDepth: Int = Value.maxDepth) -> String? {
    do {
        try value.validate(path: path, maxDepth: maxDepth)
        return nil
    } catch {
        return error.description
    }
}

/// `levels` arrays nested in one another around `1`.
private func nestedArrays(_ levels: Int) -> Value {
    var value: Value = 1
    for _ in 0..<levels { value = .array([value]) }
    return value
}

@Suite("Value validation")
struct ValueValidationTests {
    @Test func kindsAndLuaNames() {
        let cases: [(Value, Value.Kind, String)] = [
            ("s", .string, "string"), (1, .int, "integer"), (1.5, .double, "number"), (true, .bool, "boolean"),
            (.date(Date(timeIntervalSince1970: 0)), .date, "date"), (.uuid(UUID()), .uuid, "uuid"),
            (.bytes([1]), .bytes, "bytes"), ([], .array, "array"), ([:], .dictionary, "dictionary"),
        ]
        for (value, kind, luaName) in cases {
            #expect(value.kind == kind)
            #expect(kind.luaName == luaName)
        }
        #expect(Set(cases.map { $0.1 }).count == Value.Kind.allCases.count)
        #expect(Value.Kind.int.rawValue == "int")
    }

    @Test func literals() {
        let value: Value = ["s": "x", "i": 7, "d": 2.5, "b": false, "a": [1, 2], "o": ["k": []]]
        #expect(
            value
                == .dictionary([
                    "s": .string("x"), "i": .int(7), "d": .double(2.5), "b": .bool(false),
                    "a": .array([.int(1), .int(2)]), "o": .dictionary(["k": .array([])]),
                ]))
        let repeated: Value = ["k": 1, "k": 2]
        #expect(repeated == .dictionary(["k": .int(2)]))
    }

    @Test func wellFormedValuesPass() {
        let values: [Value] = [
            "text", 1, 1.5, true, .bytes([]), [], [:],
            [1, 2, 3], [1.5, 2.0], ["a", "b"], [[1], ["x"], []],
            [["a": 1], ["b": "x"], [:]],
            ["": "empty keys are fine", "list": [true, false], "nested": ["deeper": [[1.0], [2.0]]]],
            [.date(Date()), .date(Date(timeIntervalSince1970: 0))],
            [.uuid(UUID()), .uuid(UUID())],
            [.bytes([1]), .bytes([])],
        ]
        for value in values {
            #expect(validationError(value) == nil, "\(value)")
        }
    }

    @Test func heterogeneousArrayInDictionary() {
        #expect(
            validationError(["items": ["a", "b", 3]]) == "message.items[3]: expected string like items[1], got integer")
    }

    @Test func heterogeneousRootArray() {
        #expect(validationError([1, "a"]) == "message[2]: expected integer like message[1], got string")
        #expect(validationError([1, 2.5]) == "message[2]: expected integer like message[1], got number")
        #expect(validationError([2.5, 1]) == "message[2]: expected number like message[1], got integer")
        #expect(validationError([true, [:]]) == "message[2]: expected boolean like message[1], got dictionary")
        #expect(validationError([[], 1]) == "message[2]: expected array like message[1], got integer")
        #expect(
            validationError([.date(Date()), .uuid(UUID())]) == "message[2]: expected date like message[1], got uuid")
        #expect(validationError([.bytes([]), "x"]) == "message[2]: expected bytes like message[1], got string")
        #expect(validationError(["x", "y", "z", 4, 5.0]) == "message[4]: expected string like message[1], got integer")
    }

    @Test func heterogeneousArraysAtDepth() {
        #expect(
            validationError(["a": ["b": [["x"], [true, 1]]]])
                == "message.a.b[2][2]: expected boolean like b[2][1], got integer")
        #expect(
            validationError(["rows": [["n": [1, 2]], ["n": [1, "x"]]]])
                == "message.rows[2].n[2]: expected integer like n[1], got string")
        #expect(validationError([[[1, 2], [3, true]]]) == "message[1][2][2]: expected integer like message[1][2][1], got boolean")
        #expect(
            validationError(["a": ["b": ["c": ["d": [1, [2]]]]]])
                == "message.a.b.c.d[2]: expected integer like d[1], got array")
    }

    @Test func outerArrayIsCheckedBeforeItsElements() {
        #expect(validationError([[1, "a"], 2]) == "message[2]: expected array like message[1], got integer")
    }

    @Test func keysThatAreNotIdentifiersAreQuoted() {
        #expect(
            validationError(["my key": [1, "x"]]) == #"message["my key"][2]: expected integer like ["my key"][1], got string"#)
        #expect(
            validationError(["end": ["x": [1, "x"]]])
                == #"message["end"].x[2]: expected integer like x[1], got string"#)
        #expect(validationError(["2nd": [1, "x"]]) == #"message["2nd"][2]: expected integer like ["2nd"][1], got string"#)
        #expect(validationError(["": [1, "x"]]) == #"message[""][2]: expected integer like [""][1], got string"#)
        #expect(
            validationError(["say \"hi\"\n": [1, "x"]])
                == #"message["say \"hi\"\n"][2]: expected integer like ["say \"hi\"\n"][1], got string"#)
        #expect(
            validationError(["a.b]": ["c": [1, "x"]]]) == #"message["a.b]"].c[2]: expected integer like c[1], got string"#)
        #expect(validationError(["_ok9": [1, "x"]]) == "message._ok9[2]: expected integer like _ok9[1], got string")
    }

    @Test func customRootPath() {
        #expect(validationError(["a": [1, "x"]], path: "reply") == "reply.a[2]: expected integer like a[1], got string")
        #expect(validationError([1, "x"], path: "args") == "args[2]: expected integer like args[1], got string")
    }

    @Test func sameProblemReportedWhateverTheDictionaryOrder() {
        let value: Value = ["zeta": [1, "z"], "beta": [1, "b"], "alpha": ["a": [1, "a"]], "gamma": [true, 1]]
        #expect(validationError(value) == "message.alpha.a[2]: expected integer like a[1], got string")
    }

    @Test func depthLimit() {
        #expect(validationError(nestedArrays(30)) == nil)
        #expect(
            validationError(nestedArrays(31))
                == "message" + String(repeating: "[1]", count: 30) + ": nested deeper than 30 levels")
        var dictionaries: Value = "leaf"
        for _ in 0..<31 { dictionaries = ["a": dictionaries] }
        #expect(
            validationError(dictionaries)
                == "message" + String(repeating: ".a", count: 30) + ": nested deeper than 30 levels")
        #expect(validationError(["a": ["b": ["c": ["d": 1]]]], maxDepth: 3) == "message.a.b.c: nested deeper than 3 levels")
        #expect(validationError(["a": ["b": ["c": 1]]], maxDepth: 3) == nil)
        #expect(validationError(["a": [["c": 1]]], maxDepth: 2) == "message.a[1]: nested deeper than 2 levels")
        #expect(validationError([], maxDepth: 0) == "message: nested deeper than 0 levels")
        #expect(validationError(1, maxDepth: 0) == nil)
        // Empty containers count too.
        #expect(validationError([[[]]], maxDepth: 2) == "message[1][1]: nested deeper than 2 levels")
    }

    @Test func errorDescription() {
        let error = ValueError(path: "message.x", reason: "bad")
        #expect(error.description == "message.x: bad")
        #expect(error == ValueError(path: "message.x", reason: "bad"))
        #expect(error != ValueError(path: "message.y", reason: "bad"))
    }
}

@Suite struct ValueDictionaryTests {
    @Test func duplicateKeysFromTheWireAreRefused() {
        var members = ValueDictionary()
        members.appendUnchecked("name", .string("a"))
        members.appendUnchecked("tags", .array([.string("x")]))
        members.appendUnchecked("name", .string("b"))
        #expect(validationError(.dictionary(members)) == "message.name: duplicate key")
        #expect(validationError(.dictionary(["outer": .dictionary(members)])) == "message.outer.name: duplicate key")
    }

    @Test func equalityAndHashIgnoreOrder() {
        let a: ValueDictionary = ["x": .int(1), "y": .string("b")]
        let b: ValueDictionary = ["y": .string("b"), "x": .int(1)]
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != ["x": .int(1), "y": .string("c")])
        #expect(a != ["x": .int(1)])
    }

    @Test func subscriptSetsReplacesAndRemoves() {
        var d: ValueDictionary = ["x": .int(1)]
        d["y"] = .bool(true)
        d["x"] = .int(2)
        #expect(d.keys == ["x", "y"])
        #expect(d["x"] == .int(2))
        d["x"] = nil
        #expect(d.keys == ["y"])
        #expect(d["missing"] == nil)
        let repeated = ValueDictionary([("k", .int(1)), ("j", .int(2)), ("k", .int(3))])
        #expect(repeated.keys == ["k", "j"] && repeated["k"] == .int(3))
    }
}
