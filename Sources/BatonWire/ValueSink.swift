/// Receives a message's values as ``ValueReader`` finds them, depth first, in the order the
/// bytes hold them: Swift Values (``ValueBuilder``), a Lua table, or nothing at all (a check).
/// A sink never sees the wire format; the reader has already checked every rule of
/// Protocol/baton.proto's Value (one kind per value, arrays of one kind, unique keys, UUIDs of
/// 16 bytes, UTF-8, nesting) by the time the containers it opened are closed.
package protocol ValueSink {
    /// A dictionary of `count` members starts: `count` times ``key(_:)``, one value and
    /// ``endMember()``, then ``endDictionary()``. False gives up the whole read.
    mutating func beginDictionary(count: Int) -> Bool
    /// The next member's key (UTF-8); its value follows.
    mutating func key(_ utf8: UnsafeRawBufferPointer)
    /// The member whose key and value came last is complete.
    mutating func endMember()
    mutating func endDictionary()

    /// An array of `count` elements starts: `count` times one value and ``endElement(_:)``,
    /// then ``endArray()``. False gives up the whole read.
    mutating func beginArray(count: Int) -> Bool
    /// Element `index` (1-based) is complete.
    mutating func endElement(_ index: Int)
    mutating func endArray()

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

/// A sink that keeps nothing: reading into it checks a message without building it.
package struct CheckingSink: ValueSink {
    package init() {}
    package func beginDictionary(count: Int) -> Bool { true }
    package func key(_ utf8: UnsafeRawBufferPointer) {}
    package func endMember() {}
    package func endDictionary() {}
    package func beginArray(count: Int) -> Bool { true }
    package func endElement(_ index: Int) {}
    package func endArray() {}
    package func string(_ utf8: UnsafeRawBufferPointer) {}
    package func int(_ value: Int64) {}
    package func double(_ value: Double) {}
    package func bool(_ value: Bool) {}
    package func date(microseconds: Int64) {}
    package func uuid(_ bytes: UnsafeRawBufferPointer) {}
    package func bytes(_ bytes: UnsafeRawBufferPointer) {}
}
