// Value ⇄ wire ⇄ Lua: a service request's message as a script receives it (a `conn` handler, a
// reply read by `baton.launch` / app services): pushed into Lua straight from its checked bytes
// (ValueReader's trusted walk into a table sink), or from its Values when it was converted; then
// what a script hands back, read from the table (LuaRuntime.value(at:)) and written to the wire
// straight from the table (LuaTableSource, FrameEncoder.encodeServiceResponse).
//
// Input: the fields of one Dictionary message, sent as a ServiceRequest's message. Checked:
// - a message whose Values pass is pushed; one that breaks the rules is not, leaving the stack;
// - the table from the checked bytes is the table from the Values, down to the order `pairs`
//   visits it in and what `tostring` shows of dates, uuids and bytes (a Lua walker compares);
// - the table reads back as the same Values (members in any order);
// - the table written straight to a reply frame reads back as those Values.
//
// The fuzzer runs inside the runtime's configure hook, on its event loop, with the core modules
// installed and no script started: each input is pushed, walked and popped.
import BatonCore
import BatonLua
import BatonWire
import CLuaShim
import FuzzSupport
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

let walker = """
    local out = {}
    local function walk(v)
      if type(v) ~= "table" then out[#out + 1] = tostring(v) .. ":" .. type(v); return end
      out[#out + 1] = "{" .. tostring(getmetatable(v) ~= nil) .. "#" .. #v
      for k, x in pairs(v) do out[#out + 1] = tostring(k); walk(x) end
      out[#out + 1] = "}"
    end
    walk(...)
    local text = table.concat(out, " ")
    local ok, json = pcall(baton.json.encode, ...)
    return text .. " json:" .. tostring(ok) .. ":" .. tostring(json)
    """

/// Whether `a` and `b` are the same Values, members in any order, a NaN equal to itself.
func same(_ a: Value, _ b: Value) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(same)
    case (.dictionary(let x), .dictionary(let y)):
        guard x.count == y.count else { return false }
        return x.allSatisfy { member in y[member.key].map { same(member.value, $0) } ?? false }
    default: return a == b
    }
}

/// The walker's account of the table on top of the stack (left there).
func walk(_ lua: LuaState, walkerReference: Int32) -> String {
    lua_rawgeti(lua.pointer, baton_registryindex(), lua_Integer(walkerReference))
    lua.pushValue(at: -2)
    guard baton_pcall_traceback(lua.pointer, 1, 1) == LUA_OK else {
        let error = lua.toString(at: -1) ?? "?"
        lua.pop()
        fuzzFailure("the walker failed: \(error)")
    }
    let text = lua.toString(at: -1) ?? "?"
    lua.pop()
    return text
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
_ = LuaRuntime.run(.string("", chunkName: "fuzz"), modules: BatonModules.core(), on: group.next()) { runtime in
    let lua = runtime.state
    var code = walker
    let status = code.withUTF8 { buffer in
        buffer.withMemoryRebound(to: CChar.self) { baton_loadbuffer(lua.pointer, $0.baseAddress, $0.count, "=walker") }
    }
    precondition(status == LUA_OK, lua.toString(at: -1) ?? "the walker does not load")
    let walkerReference = lua.ref()

    fuzz { raw in
        let top = lua.top
        defer { lua.setTop(top) }
        let payload = serviceRequestPayload(message: [UInt8](raw))
        let message: ServiceMessage
        switch payload.withUnsafeBytes({ try? Frame(payload: $0) }) {
        case .serviceRequest(_, _, let received, _)?: message = received
        case nil: return
        case let other?: fuzzFailure("a service request read as \(other)")
        }
        let pushed = runtime.push(message, on: lua)
        guard case .success(let values) = message.values else {
            guard !pushed, lua.top == top else { fuzzFailure("a message that breaks the rules was pushed") }
            return
        }
        guard pushed, lua.top == top + 1 else { fuzzFailure("a good message was not pushed: \(values)") }
        note("pushed \(values)")
        let fromMessage = walk(lua, walkerReference: walkerReference)
        guard runtime.push(.dictionary(values), on: lua) else { fuzzFailure("good Values were not pushed: \(values)") }
        let fromValues = walk(lua, walkerReference: walkerReference)
        guard fromMessage == fromValues else {
            fuzzFailure("the table from the message's bytes is not the table from its Values:\n\(fromMessage)\n\(fromValues)")
        }
        lua.pop()

        // Lua → Values.
        let read: Value
        do {
            read = try runtime.value(at: -1, on: lua)
        } catch {
            fuzzFailure("a message's table does not read back: \(error)\n\(values)")
        }
        guard same(read, .dictionary(values)) else {
            fuzzFailure("a message's table reads back as other Values:\n\(values)\n\(read)")
        }

        // Lua → wire, straight from the table.
        var out = ByteBuffer()
        let written: Bool
        do {
            written = try FrameEncoder.encodeServiceResponse(
                channelID: 1, requestID: 2, source: runtime.messageSource(at: -1, on: lua), into: &out, maxFrameSize: FrameLimits.hardLimit)
        } catch {
            fuzzFailure("a message's table cannot be written: \(error)")
        }
        guard written else { return }
        var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
        guard case .frame(.serviceResponse(1, 2, let reply))? = try? decoder.decode(buffer: &out), reply.status == .success,
              same(.dictionary(reply.message ?? [:]), .dictionary(values)) else {
            fuzzFailure("a message's table, written straight to a reply, reads back otherwise: \(values)")
        }
    }
}
while true { sleep(3_600) }
