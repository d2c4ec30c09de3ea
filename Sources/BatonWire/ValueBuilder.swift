#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonCore

/// A ``ValueSink`` that builds ``Value``s: the message ``ValueReader`` reads, as Swift sees it.
package struct ValueBuilder: ValueSink {
    /// Dictionaries and arrays being built, innermost last.
    private var dictionaries: [ValueDictionary] = []
    private var arrays: [[Value]] = []
    private var keys: [String] = []
    /// The value read last, waiting for the member or element it belongs to; at the end,
    /// what was read.
    private var last: Value?

    package init() {}

    /// The dictionary read (empty before a read).
    package var dictionary: ValueDictionary {
        if case .dictionary(let dictionary)? = last { return dictionary }
        return [:]
    }

    /// The value read, after reading one on its own.
    package var value: Value? { last }

    package mutating func beginDictionary(count: Int) -> Bool {
        dictionaries.append(ValueDictionary(minimumCapacity: count))
        return true
    }

    package mutating func key(_ utf8: UnsafeRawBufferPointer) {
        keys.append(String(decoding: utf8, as: UTF8.self))
    }

    package mutating func endMember() {
        dictionaries[dictionaries.count - 1].appendUnchecked(keys.removeLast(), take())
    }

    package mutating func endDictionary() {
        last = .dictionary(dictionaries.removeLast())
    }

    package mutating func beginArray(count: Int) -> Bool {
        var items: [Value] = []
        items.reserveCapacity(count)
        arrays.append(items)
        return true
    }

    package mutating func endElement(_ index: Int) {
        arrays[arrays.count - 1].append(take())
    }

    package mutating func endArray() {
        last = .array(arrays.removeLast())
    }

    package mutating func string(_ utf8: UnsafeRawBufferPointer) { last = .string(String(decoding: utf8, as: UTF8.self)) }
    package mutating func int(_ value: Int64) { last = .int(value) }
    package mutating func double(_ value: Double) { last = .double(value) }
    package mutating func bool(_ value: Bool) { last = .bool(value) }
    package mutating func date(microseconds: Int64) { last = .date(WireDate.date(microseconds)) }
    package mutating func uuid(_ bytes: UnsafeRawBufferPointer) { last = .uuid(UUID(uuid: bytes.loadUnaligned(as: uuid_t.self))) }
    package mutating func bytes(_ bytes: UnsafeRawBufferPointer) { last = .bytes([UInt8](bytes)) }

    private mutating func take() -> Value {
        defer { last = nil }
        return last!
    }
}
