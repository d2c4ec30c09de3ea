#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonCore

/// A ``ValueSink`` that builds ``Value``s: the message ``ValueReader`` reads, as Swift sees it.
package struct ValueBuilder: ValueSink {
    /// A dictionary being built, and the key of the member whose value is being read.
    package struct Members {
        var dictionary: ValueDictionary
        var key: String?
    }

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

    package func beginDictionary(count: Int) -> Members? {
        Members(dictionary: ValueDictionary(minimumCapacity: count))
    }

    package func key(_ utf8: UnsafeRawBufferPointer, in members: inout Members) {
        members.key = String(decoding: utf8, as: UTF8.self)
    }

    package mutating func endMember(of members: inout Members) {
        members.dictionary.appendUnchecked(members.key.take() ?? "", take())
    }

    package mutating func endDictionary(_ members: consuming Members) {
        last = .dictionary(members.dictionary)
    }

    package func beginArray(count: Int) -> [Value]? {
        var items: [Value] = []
        items.reserveCapacity(count)
        return items
    }

    package mutating func endElement(_ index: Int, of items: inout [Value]) {
        items.append(take())
    }

    package mutating func endArray(_ items: consuming [Value]) {
        last = .array(items)
    }

    package mutating func string(_ utf8: UnsafeRawBufferPointer) { last = .string(String(decoding: utf8, as: UTF8.self)) }
    package mutating func int(_ value: Int64) { last = .int(value) }
    package mutating func double(_ value: Double) { last = .double(value) }
    package mutating func bool(_ value: Bool) { last = .bool(value) }
    package mutating func date(microseconds: Int64) { last = .date(WireDate.date(microseconds)) }
    package mutating func uuid(_ bytes: UnsafeRawBufferPointer) { last = .uuid(UUID(uuid: bytes.loadUnaligned(as: uuid_t.self))) }
    package mutating func bytes(_ bytes: UnsafeRawBufferPointer) { last = .bytes([UInt8](bytes)) }

    private mutating func take() -> Value {
        last.take()!
    }
}
