import BatonCore
import Testing

@Suite("Value paths")
struct ValuePathTests {
    @Test func members() {
        #expect(ValuePath.member("message", "items") == "message.items")
        #expect(ValuePath.member("m", "_a1") == "m._a1")
        #expect(ValuePath.member("m", "A_b") == "m.A_b")
        #expect(ValuePath.member("m", "my key") == #"m["my key"]"#)
        #expect(ValuePath.member("m", "1st") == #"m["1st"]"#)
        #expect(ValuePath.member("m", "") == #"m[""]"#)
        #expect(ValuePath.member("m", "a-b") == #"m["a-b"]"#)
        #expect(ValuePath.member("m", "é") == #"m["é"]"#)
        // Lua keywords cannot follow a dot.
        #expect(ValuePath.member("m", "end") == #"m["end"]"#)
        #expect(ValuePath.member("m", "nil") == #"m["nil"]"#)
        #expect(ValuePath.member("m", "ends") == "m.ends")
    }

    @Test func quotedKeysUseLuaEscapes() {
        #expect(ValuePath.member("m", "a\"b") == #"m["a\"b"]"#)
        #expect(ValuePath.member("m", "a\\b") == #"m["a\\b"]"#)
        #expect(ValuePath.member("m", "\n\r\t") == #"m["\n\r\t"]"#)
        #expect(ValuePath.member("m", "\u{7}\u{8}\u{B}\u{C}") == #"m["\a\b\v\f"]"#)
        #expect(ValuePath.member("m", "\u{0}1") == #"m["\0001"]"#)
        #expect(ValuePath.member("m", "\u{1B}[0m\u{7F}") == #"m["\027[0m\127"]"#)
    }

    @Test func elements() {
        #expect(ValuePath.element("message", 1) == "message[1]")
        #expect(ValuePath.element("message.items", 3) == "message.items[3]")
        #expect(ValuePath.element(#"m["a b"]"#, 12) == #"m["a b"][12]"#)
    }

    @Test func lastComponent() {
        #expect(ValuePath.lastComponent("message.items") == "items")
        #expect(ValuePath.lastComponent("message") == "message")
        #expect(ValuePath.lastComponent(#"m["a b"]"#) == #"["a b"]"#)
        #expect(ValuePath.lastComponent("m.items[2]") == "items[2]")
        #expect(ValuePath.lastComponent("m.items[2][10]") == "items[2][10]")
        #expect(ValuePath.lastComponent("m[1][2]") == "m[1][2]")
        #expect(ValuePath.lastComponent("m.a.b.c") == "c")
        #expect(ValuePath.lastComponent(#"m["a b"][3]"#) == #"["a b"][3]"#)
        #expect(ValuePath.lastComponent(#"m.x["a.b]"]"#) == #"["a.b]"]"#)
        #expect(ValuePath.lastComponent(#"m["q\"].x"].y"#) == "y")
        #expect(ValuePath.lastComponent(#"m["q\"].x"][1]"#) == #"["q\"].x"][1]"#)
        #expect(ValuePath.lastComponent(#"m["a\\"].b"#) == "b")
        #expect(ValuePath.lastComponent("") == "")
    }
}
