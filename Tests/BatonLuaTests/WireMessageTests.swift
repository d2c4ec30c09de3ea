import BatonCore
import BatonLua
import BatonWire
import NIOCore
import SwiftProtobuf
import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A request's message goes into Lua straight from its bytes; the table must be the one the
/// Values would make, down to the order `pairs` visits it in.
@Suite("Lua tables straight from a message's bytes")
struct WireMessageTests {
    static let messages: [ValueDictionary] = [
        [:],
        ["Type": "ping", "TargetId": "8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f", "CreationDate": .date(Date(timeIntervalSince1970: 1_795_000_000.123456)),
         "position": .double(83.5), "note": "a hundred bytes or so"],
        ["s": "hé", "i": .int(-7), "big": .int(.max), "d": .double(-0.0), "b": .bool(false), "t": .bool(true), "": .string(""),
         "u": .uuid(UUID(uuidString: "00000000-0000-0000-0000-0000000000FF")!), "raw": .bytes([0, 200]), "none": .bytes([])],
        ["list": .array([.int(1), .int(2)]), "empty": .array([]), "nested": .dictionary(["deep": .array([.dictionary(["x": .string("")])])]),
         "dates": .array([.date(Date(timeIntervalSince1970: 0))]), "d": .dictionary([:])],
    ]

    /// The message as a connection receives it: its checked bytes.
    static func received(_ message: ValueDictionary) throws -> ServiceMessage {
        var bytes = ByteBuffer()
        try FrameEncoder.encode(.serviceRequest(channelID: 1, requestID: 1, message: ServiceMessage(message), timeout: 0), into: &bytes, maxFrameSize: 1 << 20)
        var decoder = FrameDecoder()
        guard case .frame(.serviceRequest(_, _, let received, _))? = try decoder.decode(buffer: &bytes), received.isChecked
        else { throw ValueError(path: "message", reason: "not read as checked fields") }
        return received
    }

    @Test("the same table as from the Values, visited in the same order", arguments: messages.indices)
    func sameTable(_ index: Int) async throws {
        let message = Self.messages[index]
        let received = try Self.received(message)
        let (outcome, record) = try await runScript("""
            local function walk(v, out)
              if type(v) == "userdata" then out[#out + 1] = "userdata"; return out end
              if type(v) ~= "table" then out[#out + 1] = tostring(v) .. ":" .. type(v); return out end
              out[#out + 1] = "{" .. tostring(getmetatable(v)) .. "#" .. #v
              for k, x in pairs(v) do out[#out + 1] = tostring(k); walk(x, out) end
              out[#out + 1] = "}"
              return out
            end
            local fromBytes, fromValues = both()
            capture(table.concat(walk(fromBytes, {}), " "))
            capture(table.concat(walk(fromValues, {}), " "))
            capture(fromBytes)
            """) { runtime in
            runtime.registerGlobal("both") { call in
                guard call.runtime.push(received, on: call.lua) else { throw HostError.message("not pushed") }
                call.runtime.push(.dictionary(message), on: call.lua)
                return .values(2)
            }
        }
        #expect(outcome == .completed)
        #expect(record.errors == [])
        #expect(record.failures.isEmpty)
        guard record.values.count == 3 else {
            Issue.record("captured \(record.values)")
            return
        }
        #expect(record.values[0] == record.values[1])
        #expect(record.values[2] == .dictionary(message))
    }

    @Test("a plain message table is written as SwiftProtobuf writes the message read from it; anything else is left to the Values")
    func sameBytes() async throws {
        let (outcome, record) = try await runScript("""
            local plain = {
              {}, {a = 1}, {Type = "ping", TargetId = "8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f", CreationDate = baton.date(1795000000.25),
                            position = 83.5, note = "a hundred bytes or so"},
              {s = "hé", i = -7, big = math.maxinteger, d = -0.0, f = 2^53, b = false, t = true, [""] = "",
               u = baton.uuid("8E1F1A1C-3D7B-4E55-9D6C-0A1B2C3D4E5F"), raw = baton.bytes("\\0\\1\\255"), none = baton.bytes("")},
              {nested = {deep = {x = "", y = {}}}, other = {z = 1}},
            }
            for _, t in ipairs(plain) do same(t, true) end
            local left = {
              {list = {1, 2}}, {marked = baton.array{}}, {[1] = "a"}, {a = 1, [2] = "b"}, {bad = "\\255"},
              {["\\255"] = 1}, {f = print}, {n = baton.json.null}, setmetatable({}, {}), {m = setmetatable({a = 1}, {})},
            }
            for i, t in ipairs(left) do same(t, false, i) end
            local deep = {}
            for _ = 1, 40 do deep = {d = deep} end
            same(deep, false)
            """) { runtime in
            runtime.registerGlobal("same") { call in
                let lua = call.lua
                let expectWritten = lua.toBool(at: 2)
                var direct = ByteBuffer()
                let written = try FrameEncoder.encodeServiceResponse(
                    channelID: 1, requestID: 2, source: call.runtime.messageSource(at: 1, on: lua), into: &direct, maxFrameSize: 1 << 20)
                guard written == expectWritten else { throw HostError.message("written: \(written) \(lua.toInteger(at: 3) ?? 0)") }
                guard written else {
                    guard direct.readableBytes == 0 else { throw HostError.message("bytes left behind") }
                    return .values(0)
                }
                guard case .dictionary(let message) = try call.runtime.value(at: 1, on: lua, root: "response") else {
                    throw HostError.message("not a dictionary")
                }
                let reference: [UInt8] = try Baton_V1_Frame.with {
                    $0.serviceResponse = .with {
                        $0.channelID = 1
                        $0.requestID = 2
                        $0.status = .success
                        $0.message = Baton_V1_Dictionary(message)
                    }
                }.serializedBytes()
                _ = try Varint.read(from: &direct)
                guard Array(direct.readableBytesView) == reference else { throw HostError.message("different bytes for \(message)") }
                return .values(0)
            }
        }
        #expect(record.failures.map(\.message) == [])
        #expect(outcome == .completed)
    }
}
