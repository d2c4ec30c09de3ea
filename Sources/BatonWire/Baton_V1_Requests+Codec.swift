#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

// The codecs of the requests and their responses (see Baton_V1_Frame+Codec.swift).

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
        w.string(7, brokerURL)
        w.string(8, brokerCa)
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
            case (7, delimited): brokerURL = try r.string(f)
            case (8, delimited): brokerCa = try r.string(f)
            default: try r.skip(f.wireType)
            }
        }
    }
}
