#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

// Hand-written codecs for every message of Protocol/baton.proto: the same bytes SwiftProtobuf
// writes and reads (BatonWireTests checks both ways), at a fraction of the cost, since its
// generic visitors dominated every request's profile. The generated types stay the model.
// Field numbers below are the .proto's. A known field number with another wire type than the
// schema's is an unknown field, as protobuf's own parsers treat it.

private let varint: UInt64 = 0
private let fixed64: UInt64 = 1
private let delimited: UInt64 = 2

extension Baton_V1_Frame: WireMessage {
    func encode(to w: inout ProtoWriter) {
        switch body {
        case .hello(let m): w.message(1, m)
        case .helloAck(let m): w.message(2, m)
        case .describeRequest(let m): w.message(3, m)
        case .describeResponse(let m): w.message(4, m)
        case .launchRequest(let m): w.message(5, m)
        case .launchResponse(let m): w.message(6, m)
        case .openServiceRequest(let m): w.message(7, m)
        case .openServiceResponse(let m): w.message(8, m)
        case .serviceRequest(let m): w.message(9, m)
        case .serviceResponse(let m): w.message(10, m)
        case .closeService(let m): w.message(11, m)
        case .ping(let m): w.message(12, m)
        case .pong(let m): w.message(13, m)
        case .goodbye(let m): w.message(14, m)
        case .joinRequest(let m): w.message(15, m)
        case .joinResponse(let m): w.message(16, m)
        case nil: break
        }
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            // A oneof member seen again merges into itself; another member replaces it.
            switch (f.number, f.wireType) {
            case (1, delimited): var m = hello; try r.merge(f, into: &m); body = .hello(m)
            case (2, delimited): var m = helloAck; try r.merge(f, into: &m); body = .helloAck(m)
            case (3, delimited): var m = describeRequest; try r.merge(f, into: &m); body = .describeRequest(m)
            case (4, delimited): var m = describeResponse; try r.merge(f, into: &m); body = .describeResponse(m)
            case (5, delimited): var m = launchRequest; try r.merge(f, into: &m); body = .launchRequest(m)
            case (6, delimited): var m = launchResponse; try r.merge(f, into: &m); body = .launchResponse(m)
            case (7, delimited): var m = openServiceRequest; try r.merge(f, into: &m); body = .openServiceRequest(m)
            case (8, delimited): var m = openServiceResponse; try r.merge(f, into: &m); body = .openServiceResponse(m)
            case (9, delimited): var m = serviceRequest; try r.merge(f, into: &m); body = .serviceRequest(m)
            case (10, delimited): var m = serviceResponse; try r.merge(f, into: &m); body = .serviceResponse(m)
            case (11, delimited): var m = closeService; try r.merge(f, into: &m); body = .closeService(m)
            case (12, delimited): var m = ping; try r.merge(f, into: &m); body = .ping(m)
            case (13, delimited): var m = pong; try r.merge(f, into: &m); body = .pong(m)
            case (14, delimited): var m = goodbye; try r.merge(f, into: &m); body = .goodbye(m)
            case (15, delimited): var m = joinRequest; try r.merge(f, into: &m); body = .joinRequest(m)
            case (16, delimited): var m = joinResponse; try r.merge(f, into: &m); body = .joinResponse(m)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Hello: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint32(1, protocolVersion)
        w.string(2, deviceID)
        w.string(3, deviceName)
        w.uint32(4, maxFrameSize)
        w.string(5, revocationList)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): protocolVersion = try r.uint32(f)
            case (2, delimited): deviceID = try r.string(f)
            case (3, delimited): deviceName = try r.string(f)
            case (4, varint): maxFrameSize = try r.uint32(f)
            case (5, delimited): revocationList = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_HelloAck: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint32(1, protocolVersion)
        if hasDevice { w.message(2, device) }
        w.uint32(3, maxFrameSize)
        w.string(4, revocationList)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): protocolVersion = try r.uint32(f)
            case (2, delimited): try r.merge(f, into: &device)
            case (3, varint): maxFrameSize = try r.uint32(f)
            case (4, delimited): revocationList = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Device: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.string(1, id)
        w.string(2, name)
        w.string(3, kind)
        w.string(4, platform)
        w.string(5, model)
        w.string(6, manufacturer)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, delimited): id = try r.string(f)
            case (2, delimited): name = try r.string(f)
            case (3, delimited): kind = try r.string(f)
            case (4, delimited): platform = try r.string(f)
            case (5, delimited): model = try r.string(f)
            case (6, delimited): manufacturer = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_App: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.string(1, id)
        w.string(2, name)
        w.strings(3, schemes)
        w.strings(4, services)
        if hasAttributes { w.message(5, attributes) }
        w.bool(6, anonymous)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, delimited): id = try r.string(f)
            case (2, delimited): name = try r.string(f)
            case (3, delimited): schemes.append(try r.string(f))
            case (4, delimited): services.append(try r.string(f))
            case (5, delimited): try r.merge(f, into: &attributes)
            case (6, varint): anonymous = try r.bool(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_DescribeRequest: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, requestID)
        w.uint32(2, timeoutMs)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): requestID = try r.uint64(f)
            case (2, varint): timeoutMs = try r.uint32(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_DescribeResponse: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, requestID)
        if hasDevice { w.message(2, device) }
        for app in apps { w.message(3, app) }
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): requestID = try r.uint64(f)
            case (2, delimited): try r.merge(f, into: &device)
            case (3, delimited): apps.append(try r.message(f))
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_LaunchRequest: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, requestID)
        w.string(2, uri)
        w.string(3, appID)
        w.string(4, fallbackUri)
        w.strings(5, preferredAppIds)
        if hasData { w.message(6, data) }
        w.uint32(7, timeoutMs)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): requestID = try r.uint64(f)
            case (2, delimited): uri = try r.string(f)
            case (3, delimited): appID = try r.string(f)
            case (4, delimited): fallbackUri = try r.string(f)
            case (5, delimited): preferredAppIds.append(try r.string(f))
            case (6, delimited): try r.merge(f, into: &data)
            case (7, varint): timeoutMs = try r.uint32(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_LaunchResponse: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, requestID)
        w.enumValue(2, status.rawValue)
        w.string(3, detail)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): requestID = try r.uint64(f)
            case (2, varint): status = Baton_V1_LaunchStatus(rawValue: try r.enumValue(f)) ?? .unknown
            case (3, delimited): detail = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_OpenServiceRequest: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, requestID)
        w.uint64(2, channelID)
        w.string(3, serviceName)
        w.string(4, appID)
        w.uint32(5, timeoutMs)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): requestID = try r.uint64(f)
            case (2, varint): channelID = try r.uint64(f)
            case (3, delimited): serviceName = try r.string(f)
            case (4, delimited): appID = try r.string(f)
            case (5, varint): timeoutMs = try r.uint32(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_OpenServiceResponse: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, requestID)
        w.enumValue(2, status.rawValue)
        w.string(3, detail)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): requestID = try r.uint64(f)
            case (2, varint): status = Baton_V1_OpenStatus(rawValue: try r.enumValue(f)) ?? .unknown
            case (3, delimited): detail = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_ServiceRequest: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, channelID)
        w.uint64(2, requestID)
        if hasMessage { w.message(3, message) }
        w.uint32(4, timeoutMs)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): channelID = try r.uint64(f)
            case (2, varint): requestID = try r.uint64(f)
            case (3, delimited): try r.merge(f, into: &message)
            case (4, varint): timeoutMs = try r.uint32(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_ServiceResponse: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, channelID)
        w.uint64(2, requestID)
        w.enumValue(3, status.rawValue)
        if hasMessage { w.message(4, message) }
        w.string(5, detail)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): channelID = try r.uint64(f)
            case (2, varint): requestID = try r.uint64(f)
            case (3, varint): status = Baton_V1_ResponseStatus(rawValue: try r.enumValue(f)) ?? .unknown
            case (4, delimited): try r.merge(f, into: &message)
            case (5, delimited): detail = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_CloseService: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, channelID)
        w.enumValue(2, status.rawValue)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): channelID = try r.uint64(f)
            case (2, varint): status = Baton_V1_ClosedStatus(rawValue: try r.enumValue(f)) ?? .unknown
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Ping: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, nonce)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): nonce = try r.uint64(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Pong: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, nonce)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): nonce = try r.uint64(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Goodbye: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.enumValue(1, reason.rawValue)
        w.string(2, detail)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): reason = Baton_V1_Goodbye.Reason(rawValue: try r.enumValue(f)) ?? .unknown
            case (2, delimited): detail = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Value: WireMessage {
    func encode(to w: inout ProtoWriter) {
        switch kind {
        case .stringValue(let s): w.presentString(1, s)
        case .intValue(let i): w.presentSInt64(2, i)
        case .doubleValue(let d): w.presentDouble(3, d)
        case .boolValue(let b): w.presentVarint(4, b ? 1 : 0)
        case .dateValue(let d): w.presentSInt64(5, d)
        case .uuidValue(let u): w.presentBytes(6, u)
        case .bytesValue(let b): w.presentBytes(7, b)
        case .arrayValue(let a): w.message(8, a)
        case .dictionaryValue(let d): w.message(9, d)
        case nil: break
        }
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, delimited): kind = .stringValue(try r.string(f))
            case (2, varint): kind = .intValue(try r.sint64(f))
            case (3, fixed64): kind = .doubleValue(try r.double(f))
            case (4, varint): kind = .boolValue(try r.bool(f))
            case (5, varint): kind = .dateValue(try r.sint64(f))
            case (6, delimited): kind = .uuidValue(try r.bytes(f))
            case (7, delimited): kind = .bytesValue(try r.bytes(f))
            case (8, delimited):
                var a = Baton_V1_Array()
                if case .arrayValue(let existing) = kind { a = existing }
                try r.merge(f, into: &a)
                kind = .arrayValue(a)
            case (9, delimited):
                var d = Baton_V1_Dictionary()
                if case .dictionaryValue(let existing) = kind { d = existing }
                try r.merge(f, into: &d)
                kind = .dictionaryValue(d)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Array: WireMessage {
    func encode(to w: inout ProtoWriter) {
        for element in elements { w.message(1, element) }
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, delimited): elements.append(try r.message(f))
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Dictionary: WireMessage {
    func encode(to w: inout ProtoWriter) {
        for entry in entries { w.message(1, entry) }
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, delimited): entries.append(try r.message(f))
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Dictionary.Entry: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.string(1, key)
        if hasValue { w.message(2, value) }
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, delimited): key = try r.string(f)
            case (2, delimited): try r.merge(f, into: &value)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_Frame {
    /// The frame in `bytes` (one serialized `Frame`, no length prefix).
    ///
    /// - Throws: ``ProtoReader/Malformed`` naming what is wrong.
    init(wireBytes bytes: UnsafeRawBufferPointer) throws(ProtoReader.Malformed) {
        self.init()
        var reader = ProtoReader(bytes)
        try merge(from: &reader)
    }
}

extension Baton_V1_JoinRequest: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, requestID)
        w.bytes(2, inviteSecret)
        w.string(3, deviceID)
        w.string(4, deviceName)
        w.bytes(5, publicKey)
        w.uint32(6, timeoutMs)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): requestID = try r.uint64(f)
            case (2, delimited): inviteSecret = try r.bytes(f)
            case (3, delimited): deviceID = try r.string(f)
            case (4, delimited): deviceName = try r.string(f)
            case (5, delimited): publicKey = try r.bytes(f)
            case (6, varint): timeoutMs = try r.uint32(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}

extension Baton_V1_JoinResponse: WireMessage {
    func encode(to w: inout ProtoWriter) {
        w.uint64(1, requestID)
        w.enumValue(2, status.rawValue)
        w.string(3, detail)
        w.bytes(4, accountCertificate)
        w.bytes(5, deviceCertificate)
        w.string(6, revocationList)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): requestID = try r.uint64(f)
            case (2, varint): status = Baton_V1_JoinStatus(rawValue: try r.enumValue(f)) ?? .unknown
            case (3, delimited): detail = try r.string(f)
            case (4, delimited): accountCertificate = try r.bytes(f)
            case (5, delimited): deviceCertificate = try r.bytes(f)
            case (6, delimited): revocationList = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}
