#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

// Hand-written codecs for every message of Protocol/baton.proto (the frame and the handshake
// here; requests in Baton_V1_Requests+Codec.swift, values in Baton_V1_Value+Codec.swift): the same bytes SwiftProtobuf
// writes and reads (BatonWireTests checks both ways), at a fraction of the cost, since its
// generic visitors dominated every request's profile. The generated types stay the model.
// Field numbers below are the .proto's. A known field number with another wire type than the
// schema's is an unknown field, as protobuf's own parsers treat it.

/// Wire types, as the codecs below match them (ProtoWriter.WireType writes them).
let varint: UInt64 = 0
let fixed64: UInt64 = 1
let delimited: UInt64 = 2

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
        w.string(6, traceparent)
    }

    mutating func merge(from r: inout ProtoReader) throws(ProtoReader.Malformed) {
        while let f = try r.nextField() {
            switch (f.number, f.wireType) {
            case (1, varint): protocolVersion = try r.uint32(f)
            case (2, delimited): deviceID = try r.string(f)
            case (3, delimited): deviceName = try r.string(f)
            case (4, varint): maxFrameSize = try r.uint32(f)
            case (5, delimited): revocationList = try r.string(f)
            case (6, delimited): traceparent = try r.string(f)
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
