import BatonCore

/// A message that writes its own members (a Lua table), without Values in between: the writing
/// twin of ``ValueSink``. It sees values, never the wire format.
package protocol MessageSource {
    /// Writes every member with ``ProtoWriter/member(key:_:)``; false gives up (the writer is
    /// then thrown away, and the message is sent another way).
    func writeMembers(to writer: inout ProtoWriter) -> Bool
}

// Values as Protocol/baton.proto writes them: a `Dictionary` is repeated `Entry {key, value}`,
// a `Value` one field of its kind. The field numbers of those three messages live here only.
extension ProtoWriter {
    /// One `Dictionary` member: `key` (UTF-8), then the value `value` writes (with one of the
    /// value methods below). False when `value` gives up.
    package mutating func member(key: UnsafeRawBufferPointer, _ value: (inout ProtoWriter) -> Bool) -> Bool {
        var written = true
        tag(1, .lengthDelimited)
        lengthPrefixed { w in
            if key.count > 0 {
                w.tag(1, .lengthDelimited)
                w.varint(UInt64(key.count))
                w.raw(key)
            }
            w.tag(2, .lengthDelimited)
            w.lengthPrefixed { written = value(&$0) }
        }
        return written
    }

    /// A string value, from its UTF-8.
    package mutating func stringValue(_ utf8: UnsafeRawBufferPointer) {
        tag(1, .lengthDelimited)
        varint(UInt64(utf8.count))
        raw(utf8)
    }

    /// A bytes value.
    package mutating func bytesValue(_ bytes: UnsafeRawBufferPointer) {
        tag(7, .lengthDelimited)
        varint(UInt64(bytes.count))
        raw(bytes)
    }

    /// A dictionary value, its members written by `members`. False when `members` gives up.
    package mutating func dictionaryValue(_ members: (inout ProtoWriter) -> Bool) -> Bool {
        var written = true
        tag(9, .lengthDelimited)
        lengthPrefixed { written = members(&$0) }
        return written
    }

    /// `value`, whatever its kind: the bytes `Baton_V1_Value(value)` encodes to.
    package mutating func value(_ value: Value) {
        switch value {
        case .string(let s): presentString(1, s)
        case .int(let i): presentSInt64(2, i)
        case .double(let d): presentDouble(3, d)
        case .bool(let b): presentVarint(4, b ? 1 : 0)
        case .date(let d): presentSInt64(5, WireDate.microseconds(d))
        case .uuid(let u):
            tag(6, .lengthDelimited)
            varint(16)
            withUnsafeBytes(of: u.uuid) { raw($0) }
        case .bytes(let b):
            b.withUnsafeBytes { bytesValue($0) }
        case .array(let items):
            tag(8, .lengthDelimited)
            lengthPrefixed { w in
                for item in items {
                    w.tag(1, .lengthDelimited)
                    w.lengthPrefixed { $0.value(item) }
                }
            }
        case .dictionary(let members):
            tag(9, .lengthDelimited)
            lengthPrefixed { $0.members(of: members) }
        }
    }

    /// The members of `dictionary`: the bytes `Baton_V1_Dictionary(dictionary)` encodes to.
    package mutating func members(of dictionary: ValueDictionary) {
        for (key, value) in dictionary {
            tag(1, .lengthDelimited)
            lengthPrefixed { w in
                w.string(1, key)
                w.tag(2, .lengthDelimited)
                w.lengthPrefixed { $0.value(value) }
            }
        }
    }
}
