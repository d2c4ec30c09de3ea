#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonCore
import BatonWire
import CLuaShim

// Messages between Lua tables and the wire without Values in between: a ValueSink that builds
// the table a message reads into, and a MessageSource that writes a table's members. Neither
// sees the wire format; BatonWire's reader and writer do.
extension LuaRuntime {
    /// Pushes a request's message as a table: straight from its checked bytes, or from its
    /// Values, the very table ``push(_:on:)-(Value,_)`` makes of the same message either way.
    /// False (pushing nothing) where that would fail, or for a message that breaks the rules.
    @discardableResult
    package func push(_ message: ServiceMessage, on lua: LuaState) -> Bool {
        let top = lua.top
        var sink = LuaTableSink(runtime: self, lua: lua)
        switch message.read(into: &sink) {
        case true?:
            return true
        case false?:
            lua.setTop(top)
            return false
        case nil:
            guard case .success(let values) = message.values else { return false }
            return push(.dictionary(values), on: lua)
        }
    }

    /// The message table at `index` as a source of members for a reply frame: written exactly
    /// as the message ``value(at:on:root:)`` reads from it would be. It gives up (and the table
    /// is read the usual way, which also finds the words for any error) at whatever is not
    /// plainly a message: a metatable, an array, a key or string that is not UTF-8, a value that
    /// is not a string, number, boolean, date, uuid, bytes or such a table, or nesting past 32.
    ///
    /// A named type rather than `some MessageSource`: an opaque type from another module is
    /// looked up by name at run time, on every call.
    package func messageSource(at index: Int32, on lua: LuaState) -> LuaTableSource {
        LuaTableSource(runtime: self, lua: lua, index: lua.absolute(index))
    }
}

/// Builds Lua tables from what ``ValueReader`` reads: dictionaries as tables with string keys,
/// arrays as sequences marked `baton.array`, the other kinds as ``LuaRuntime/push(_:on:)-(Value,_)`` pushes them.
private struct LuaTableSink: ValueSink {
    let runtime: LuaRuntime
    let lua: LuaState

    func beginDictionary(count: Int) -> Void? {
        guard lua.checkStack(4) else { return nil }
        lua.newTable(recordCount: Int32(clamping: count))
        return ()
    }

    func key(_ utf8: UnsafeRawBufferPointer, in table: inout Void) { pushString(utf8) }
    func endMember(of table: inout Void) { lua.rawSet(-3) }
    func endDictionary(_ table: consuming Void) {}

    func beginArray(count: Int) -> Void? {
        guard lua.checkStack(4) else { return nil }
        lua.newTable(arrayCount: Int32(clamping: count))
        return ()
    }

    func endElement(_ index: Int, of table: inout Void) { lua.rawSet(-2, index: index) }

    func endArray(_ table: consuming Void) {
        lua.pushRef(runtime.metatables.arrayRef)
        lua.setMetatable(-2)
    }

    func string(_ utf8: UnsafeRawBufferPointer) { pushString(utf8) }
    func int(_ value: Int64) { lua.push(value) }
    func double(_ value: Double) { lua.push(value) }
    func bool(_ value: Bool) { lua.push(value) }
    func date(microseconds: Int64) { runtime.pushDate(WireDate.date(microseconds), on: lua) }
    func uuid(_ bytes: UnsafeRawBufferPointer) { runtime.pushUUID(UUID(uuid: bytes.loadUnaligned(as: uuid_t.self)), on: lua) }
    func bytes(_ bytes: UnsafeRawBufferPointer) { runtime.pushBytes([UInt8](bytes), on: lua) }

    private func pushString(_ bytes: UnsafeRawBufferPointer) {
        _ = lua_pushlstring(lua.pointer, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
    }
}

/// Writes the members of the message table at `index` (see ``LuaRuntime/messageSource(at:on:)``).
package struct LuaTableSource: MessageSource {
    let runtime: LuaRuntime
    let lua: LuaState
    let index: Int32

    package func writeMembers(to writer: inout ProtoWriter) -> Bool {
        table(index, depth: 0, into: &writer)
    }

    private func table(_ t: Int32, depth: Int, into writer: inout ProtoWriter) -> Bool {
        guard depth < 32, lua.checkStack(6) else { return false }
        if lua_getmetatable(lua.pointer, t) != 0 {
            lua.pop()
            return false
        }
        lua.pushNil()
        while lua.next(t) {
            guard lua.type(at: -2) == .string, let key = lua.utf8(at: -2) else {
                lua.pop(2)
                return false
            }
            let written = writer.member(key: key) { w in value(depth: depth, into: &w) }
            lua.pop()
            guard written else {
                lua.pop()
                return false
            }
        }
        return true
    }

    /// The value on top of the stack.
    private func value(depth: Int, into writer: inout ProtoWriter) -> Bool {
        switch lua.type(at: -1) {
        case .string:
            guard let text = lua.utf8(at: -1) else { return false }
            writer.stringValue(text)
        case .number:
            if lua.isInteger(at: -1), let i = lua.toInteger(at: -1) {
                writer.value(.int(i))
            } else if let d = lua.toNumber(at: -1) {
                writer.value(.double(d))
            } else {
                return false
            }
        case .boolean:
            writer.value(.bool(lua.toBool(at: -1)))
        case .table:
            let t = lua.absolute(-1)
            return writer.dictionaryValue { w in table(t, depth: depth + 1, into: &w) }
        case .userdata:
            guard lua_getmetatable(lua.pointer, -1) != 0 else { return false }
            let mt = lua.toPointer(at: -1)
            lua.pop()
            guard let p = lua.toUserdata(at: -1) else { return false }
            if mt == runtime.metatables.date {
                writer.value(.date(Date(timeIntervalSinceReferenceDate: p.load(as: Double.self))))
            } else if mt == runtime.metatables.uuid {
                writer.value(.uuid(LuaRuntime.uuid(at: p)))
            } else if mt == runtime.metatables.bytes {
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
}
