#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonWire
import CLuaShim

extension LuaRuntime {
    /// Pushes the message whose `Dictionary` fields a ``ServiceMessage`` holds checked: the very
    /// table ``push(_:on:)`` makes of the same message as Values (the same members, pushed in the
    /// same order into a table of the same size), without the Values in between. Returns false
    /// (pushing nothing) where ``push(_:on:)`` would; nil (pushing nothing) for fields in a form
    /// it does not read (tags written longer than needed): push the Values instead.
    package func pushMessage(checkedFields fields: UnsafeRawBufferPointer, on lua: LuaState) -> Bool? {
        let top = lua.top
        guard let pushed = pushDictionary(CheckedReader(fields), on: lua) else {
            lua.setTop(top)
            return nil
        }
        return pushed
    }

    /// Nil when the bytes are not what they should be (not reached for checked fields).
    private func pushDictionary(_ fields: CheckedReader, on lua: LuaState) -> Bool? {
        guard lua.checkStack(4) else { return false }
        guard let count = fields.fieldCount() else { return nil }
        lua.newTable(recordCount: count)
        var reader = fields
        while !reader.isAtEnd {
            guard reader.tag() == 1 << 3 | 2, var entry = reader.delimited() else { return nil }
            var tag = entry.tag()
            if tag == 1 << 3 | 2 {
                guard let key = entry.delimited() else { return nil }
                pushString(key.bytes, on: lua)
                tag = entry.tag()
            } else {
                pushString(UnsafeRawBufferPointer(start: nil, count: 0), on: lua)
            }
            guard tag == 2 << 3 | 2, let value = entry.delimited(), entry.isAtEnd else { return nil }
            guard let pushed = pushValue(value, on: lua) else { return nil }
            guard pushed else {
                lua.pop(2)
                return false
            }
            lua.rawSet(-3)
        }
        return true
    }

    private func pushArray(_ elements: CheckedReader, on lua: LuaState) -> Bool? {
        guard lua.checkStack(4) else { return false }
        guard let count = elements.fieldCount() else { return nil }
        lua.newTable(arrayCount: count)
        var reader = elements
        var i = 0
        while !reader.isAtEnd {
            guard reader.tag() == 1 << 3 | 2, let element = reader.delimited() else { return nil }
            guard let pushed = pushValue(element, on: lua) else { return nil }
            guard pushed else {
                lua.pop()
                return false
            }
            i += 1
            lua.rawSet(-2, index: i)
        }
        lua.pushRef(metatables.arrayRef)
        lua.setMetatable(-2)
        return true
    }

    private func pushValue(_ value: CheckedReader, on lua: LuaState) -> Bool? {
        var reader = value
        switch reader.tag() {
        case 1 << 3 | 2:
            guard let text = reader.delimited() else { return nil }
            pushString(text.bytes, on: lua)
        case 2 << 3 | 0:
            guard let raw = reader.varint() else { return nil }
            lua.push(CheckedReader.zigzag(raw))
        case 3 << 3 | 1:
            guard let raw = reader.fixed64() else { return nil }
            lua.push(Double(bitPattern: raw))
        case 4 << 3 | 0:
            guard let raw = reader.varint() else { return nil }
            lua.push(raw != 0)
        case 5 << 3 | 0:
            guard let raw = reader.varint() else { return nil }
            pushDate(WireDate.date(CheckedReader.zigzag(raw)), on: lua)
        case 6 << 3 | 2:
            guard let raw = reader.delimited(), raw.bytes.count == 16 else { return nil }
            pushUUID(UUID(uuid: raw.bytes.loadUnaligned(as: uuid_t.self)), on: lua)
        case 7 << 3 | 2:
            guard let raw = reader.delimited() else { return nil }
            pushBytes([UInt8](raw.bytes), on: lua)
        case 8 << 3 | 2:
            guard let elements = reader.delimited() else { return nil }
            return pushArray(elements, on: lua)
        case 9 << 3 | 2:
            guard let members = reader.delimited() else { return nil }
            return pushDictionary(members, on: lua)
        default:
            return nil
        }
        return true
    }

    private func pushString(_ bytes: UnsafeRawBufferPointer, on lua: LuaState) {
        _ = lua_pushlstring(lua.pointer, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
    }
}

/// Reads the protobuf pieces of checked message fields (one-byte tags: field numbers below 16):
/// nil for anything else, which checked fields never hold.
private struct CheckedReader {
    let bytes: UnsafeRawBufferPointer
    private var index = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }

    @inline(__always)
    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    /// The next field's tag; 0 (no field) at the end or for a tag longer than a byte.
    @inline(__always)
    mutating func tag() -> UInt64 {
        guard index < bytes.count, bytes[index] < 0x80 else { return 0 }
        index += 1
        return UInt64(bytes[index - 1])
    }

    mutating func fixed64() -> UInt64? {
        guard bytes.count - index >= 8 else { return nil }
        let value = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        index += 8
        return UInt64(littleEndian: value)
    }

    @inline(__always)
    mutating func delimited() -> CheckedReader? {
        guard let length = varint(), length <= UInt64(bytes.count - index) else { return nil }
        let start = index
        index += Int(length)
        return CheckedReader(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
    }

    /// How many fields there are (each a tag and a varint, fixed64 or length-delimited value).
    func fieldCount() -> Int32? {
        var reader = self
        var n: Int32 = 0
        while !reader.isAtEnd {
            switch reader.tag() & 7 {
            case 0 where reader.varint() != nil: break
            case 1 where reader.fixed64() != nil: break
            case 2 where reader.delimited() != nil: break
            default: return nil
            }
            n += 1
        }
        return n
    }

    static func zigzag(_ raw: UInt64) -> Int64 {
        Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }
}

extension LuaRuntime {
    /// Writes the message table at `index` as `Dictionary` entries, exactly as the message
    /// ``value(at:on:root:)`` reads from it would be written, without reading it into Values
    /// first. Gives up (false; throw the writer away and read the table the usual way, which
    /// also finds the words for any error) at whatever is not plainly a message: a metatable,
    /// an array, a key that is not a string of UTF-8, a value that is not a string of UTF-8, a
    /// number, a boolean, a date, a uuid, bytes or such a table, or nesting past 32 levels.
    package func encodeMessage(at index: Int32, on lua: LuaState, into writer: inout ProtoWriter) -> Bool {
        encodeTable(lua.absolute(index), on: lua, depth: 0, into: &writer)
    }

    private func encodeTable(_ t: Int32, on lua: LuaState, depth: Int, into writer: inout ProtoWriter) -> Bool {
        guard depth < 32, lua.checkStack(6) else { return false }
        if lua_getmetatable(lua.pointer, t) != 0 {
            lua.pop()
            return false
        }
        lua.pushNil()
        while lua.next(t) {
            guard lua.type(at: -2) == .string, let key = Self.utf8(at: -2, on: lua) else {
                lua.pop(2)
                return false
            }
            let written = writer.entry(key: key) { w in encodeValue(on: lua, depth: depth, into: &w) }
            lua.pop()
            guard written else {
                lua.pop()
                return false
            }
        }
        return true
    }

    /// The value on top of the stack.
    private func encodeValue(on lua: LuaState, depth: Int, into writer: inout ProtoWriter) -> Bool {
        switch lua.type(at: -1) {
        case .string:
            guard let text = Self.utf8(at: -1, on: lua) else { return false }
            writer.stringValue(text)
        case .number:
            if lua.isInteger(at: -1), let i = lua.toInteger(at: -1) {
                writer.scalarValue(.int(i))
            } else if let d = lua.toNumber(at: -1) {
                writer.scalarValue(.double(d))
            } else {
                return false
            }
        case .boolean:
            writer.scalarValue(.bool(lua.toBool(at: -1)))
        case .table:
            let t = lua.absolute(-1)
            return writer.dictionaryValue { w in encodeTable(t, on: lua, depth: depth + 1, into: &w) }
        case .userdata:
            guard lua_getmetatable(lua.pointer, -1) != 0 else { return false }
            let mt = lua.toPointer(at: -1)
            lua.pop()
            guard let p = lua.toUserdata(at: -1) else { return false }
            if mt == metatables.date {
                writer.scalarValue(.date(Date(timeIntervalSince1970: p.load(as: Double.self))))
            } else if mt == metatables.uuid {
                writer.scalarValue(.uuid(LuaRuntime.uuid(at: p)))
            } else if mt == metatables.bytes {
                LuaRuntime.pushBytesString(lua, at: -1)
                defer { lua.pop() }
                guard lua.type(at: -1) == .string else { return false }
                var length = 0
                guard let bytes = baton_tostring(lua.pointer, -1, &length) else { return false }
                writer.bytesValue(UnsafeRawBufferPointer(start: bytes, count: length))
            } else {
                return false
            }
        default:
            return false
        }
        return true
    }

    /// The bytes of the string at `index` if they are well-formed UTF-8.
    private static func utf8(at index: Int32, on lua: LuaState) -> UnsafeRawBufferPointer? {
        var length = 0
        guard let bytes = baton_tostring(lua.pointer, index, &length), baton_utf8_valid(bytes, length) != 0 else { return nil }
        return UnsafeRawBufferPointer(start: bytes, count: length)
    }
}
