/// Receives a message's values as ``ValueReader`` finds them, depth first, in the order the
/// bytes hold them: Swift Values (``ValueBuilder``), a Lua table, or nothing at all (a check).
/// A sink never sees the wire format; the reader has already checked every rule of
/// Protocol/baton.proto's Value (one kind per value, arrays of one kind, unique keys, UUIDs of
/// 16 bytes, UTF-8, nesting) by the time the containers it opened are closed.
@usableFromInline
package protocol ValueSink {
    /// What the sink keeps of a dictionary while its members are read (`Void` when nothing):
    /// the reader holds it, so that a sink needs no stack of its own.
    associatedtype DictionaryState
    /// What the sink keeps of an array while its elements are read.
    associatedtype ArrayState

    /// Whether the sink uses the counts ``beginDictionary(count:)`` and ``beginArray(count:)``
    /// are given. One that does not (a check) gets 0, and the reader spares a pass over the
    /// bytes. True unless the sink says otherwise.
    static var needsCounts: Bool { get }

    /// A dictionary of `count` members starts: `count` times ``key(_:in:)``, one value and
    /// ``endMember(of:)``, then ``endDictionary(_:)``. Nil gives up the whole read.
    mutating func beginDictionary(count: Int) -> DictionaryState?
    /// The next member's key (UTF-8); its value follows.
    mutating func key(_ utf8: UnsafeRawBufferPointer, in dictionary: inout DictionaryState)
    /// The member whose key and value came last is complete.
    mutating func endMember(of dictionary: inout DictionaryState)
    mutating func endDictionary(_ dictionary: consuming DictionaryState)

    /// An array of `count` elements starts: `count` times one value and
    /// ``endElement(_:of:)``, then ``endArray(_:)``. Nil gives up the whole read.
    mutating func beginArray(count: Int) -> ArrayState?
    /// Element `index` (1-based) is complete.
    mutating func endElement(_ index: Int, of array: inout ArrayState)
    mutating func endArray(_ array: consuming ArrayState)

    mutating func string(_ utf8: UnsafeRawBufferPointer)
    mutating func int(_ value: Int64)
    mutating func double(_ value: Double)
    mutating func bool(_ value: Bool)
    /// A date, as microseconds since 1970-01-01T00:00:00Z.
    mutating func date(microseconds: Int64)
    /// A UUID's 16 bytes, in the order its text form writes them.
    mutating func uuid(_ bytes: UnsafeRawBufferPointer)
    mutating func bytes(_ bytes: UnsafeRawBufferPointer)
}

extension ValueSink {
    @inlinable
    package static var needsCounts: Bool { true }
}

/// A sink that keeps nothing: reading into it checks a message without building it.
package struct CheckingSink: ValueSink {
    package static var needsCounts: Bool { false }
    package init() {}
    package func beginDictionary(count: Int) -> Void? { () }
    package func key(_ utf8: UnsafeRawBufferPointer, in dictionary: inout Void) {}
    package func endMember(of dictionary: inout Void) {}
    package func endDictionary(_ dictionary: consuming Void) {}
    package func beginArray(count: Int) -> Void? { () }
    package func endElement(_ index: Int, of array: inout Void) {}
    package func endArray(_ array: consuming Void) {}
    package func string(_ utf8: UnsafeRawBufferPointer) {}
    package func int(_ value: Int64) {}
    package func double(_ value: Double) {}
    package func bool(_ value: Bool) {}
    package func date(microseconds: Int64) {}
    package func uuid(_ bytes: UnsafeRawBufferPointer) {}
    package func bytes(_ bytes: UnsafeRawBufferPointer) {}
}
