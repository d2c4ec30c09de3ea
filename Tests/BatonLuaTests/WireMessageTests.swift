import BatonCore
import BatonLua
import BatonWire
import NIOCore
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

    /// The message's checked fields, as a connection receives them.
    static func checkedFields(_ message: ValueDictionary) throws -> [UInt8] {
        var bytes = ByteBuffer()
        try FrameEncoder.encodeServiceRequest(channelID: 1, requestID: 1, message: message, into: &bytes, maxFrameSize: 1 << 20)
        var decoder = FrameDecoder()
        guard case .serviceRequest(let request)? = try decoder.decodeConvertingMessages(buffer: &bytes, seenEOF: false),
              let fields = request.message.withCheckedFields({ Array($0) })
        else { throw ValueError(path: "message", reason: "not read as checked fields") }
        return fields
    }

    @Test("the same table as from the Values, visited in the same order", arguments: messages.indices)
    func sameTable(_ index: Int) async throws {
        let message = Self.messages[index]
        let fields = try Self.checkedFields(message)
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
                let pushed = fields.withUnsafeBytes { call.runtime.pushMessage(checkedFields: $0, on: call.lua) }
                guard pushed == true else { throw HostError.message("not pushed: \(String(describing: pushed))") }
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
}
