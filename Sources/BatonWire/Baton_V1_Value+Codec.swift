#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

// The codecs of Value, Array and Dictionary (see Baton_V1_Frame+Codec.swift).

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
