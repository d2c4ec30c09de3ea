#if canImport(Glibc)
import Glibc
#endif
import BatonCore

/// The one reader of message values: walks the bytes of a `Dictionary` message
/// (Protocol/baton.proto) and hands what it finds to a ``ValueSink``, checking every Value rule
/// on the way. Swift Values, Lua tables and plain checks all come through here.
///
/// It reads proto3 as written by any serializer (fields in any order, unknown fields skipped),
/// except where proto3 would merge: a field of an entry or a value seen twice. Those messages
/// come back ``Outcome/odd``; ``values(ofDictionary:path:)`` then reads them as the generated
/// types would and writes them out again in the common form first.
@usableFromInline
package enum ValueReader {
    /// Value's nesting limit (``Value/validate(path:maxDepth:)`` applies the same).
    @usableFromInline
    package static let maxDepth = 64

    /// How much to check.
    @usableFromInline
    package enum Mode: Sendable {
        /// Every rule; a message that breaks one stops the read (``Outcome/broken``).
        case strict
        /// Only what makes a value unreadable (no kind, a UUID not of 16 bytes): mixed arrays,
        /// repeated keys and deep nesting are read as they come, for `validate` to name.
        case lenient
        /// Bytes that passed a strict read already (a ``ServiceMessage``'s checked bytes):
        /// nothing is checked again, not even UTF-8 (a dictionary's read is ``TrustedWalk``'s
        /// one lean pass).
        case trusted
    }

    /// How a read ended.
    @usableFromInline
    package enum Outcome: Sendable, Equatable {
        /// Everything went to the sink.
        case read
        /// The sink refused a container (a Lua stack that cannot grow).
        case gaveUp
        /// A Value rule is broken (strict mode): ``values(ofDictionary:path:)`` names it.
        case broken
        /// A field repeated where proto3 merges: read it the general way.
        case odd
        /// A value cannot be read at all; the error names where, below the path given.
        case invalid(ValueError)
    }

    /// Reads the fields of a `Dictionary` message into `sink`. `units` is how deep the
    /// Dictionary message sits in its frame, as protobuf parsers count nesting (a frame's body
    /// is 1), so that hostile nesting fails as it does in the general path.
    ///
    /// - Throws: ``ProtoReader/Malformed`` for bytes that are not protobuf, text that is not
    ///   UTF-8, or nesting past ``ProtoReader/maxDepth``: the frame is malformed.
    @inlinable
    package static func read<S: ValueSink>(
        dictionary bytes: UnsafeRawBufferPointer, into sink: inout S, mode: Mode = .strict, path: String = "message",
        units: Int = 2
    ) throws(ProtoReader.Malformed) -> Outcome {
        if mode == .trusted { return TrustedWalk.dictionary(bytes, into: &sink) ? .read : .gaveUp }
        var walker = Walker(mode)
        return try outcome(path: path) { () throws(Stop) in try walker.dictionary(bytes, depth: 0, units: units, into: &sink) }
    }

    /// Reads the fields of one `Value` message into `sink`, as ``read(dictionary:into:mode:path:units:)``.
    @inlinable
    package static func read<S: ValueSink>(
        value bytes: UnsafeRawBufferPointer, into sink: inout S, mode: Mode = .strict, path: String = "value", units: Int = 1
    ) throws(ProtoReader.Malformed) -> Outcome {
        var walker = Walker(mode)
        return try outcome(path: path) { () throws(Stop) in _ = try walker.value(bytes, depth: 0, units: units, into: &sink) }
    }

    /// The dictionary the bytes hold, or why it breaks the Value rules (in the words of
    /// ``Value/validate(path:maxDepth:)``, at the path below `path`).
    ///
    /// - Throws: ``ProtoReader/Malformed`` as ``read(dictionary:into:mode:path:units:)``.
    package static func values(
        ofDictionary bytes: UnsafeRawBufferPointer, path: String = "message", units: Int = 2
    ) throws(ProtoReader.Malformed) -> Result<ValueDictionary, ValueError> {
        var builder = ValueBuilder()
        switch try read(dictionary: bytes, into: &builder, path: path, units: units) {
        case .read:
            return .success(builder.dictionary)
        case .invalid(let error):
            return .failure(error)
        case .gaveUp:
            preconditionFailure("a ValueBuilder never gives up")
        case .odd:
            // The generated types' reading, written back in the common form, then read again.
            var wire = Baton_V1_Dictionary()
            var reader = ProtoReader(bytes, depth: units)
            try wire.merge(from: &reader)
            var writer = ProtoWriter()
            wire.encode(to: &writer)
            return try writer.withBytes { canonical throws(ProtoReader.Malformed) in
                try values(ofDictionary: canonical, path: path, units: units)
            }
        case .broken:
            var lenient = ValueBuilder()
            switch try read(dictionary: bytes, into: &lenient, mode: .lenient, path: path, units: units) {
            case .invalid(let error):
                return .failure(error)
            case .read, .gaveUp, .broken, .odd:
                let dictionary = lenient.dictionary
                do throws(ValueError) {
                    try Value.dictionary(dictionary).validate(path: path, maxDepth: maxDepth)
                } catch {
                    return .failure(error)
                }
                return .success(dictionary)
            }
        }
    }

    /// How `walk` ended.
    @usableFromInline
    static func outcome(path: String, _ walk: () throws(Stop) -> Void) throws(ProtoReader.Malformed) -> Outcome {
        do throws(Stop) {
            try walk()
            return .read
        } catch {
            switch error {
            case .malformed(let malformed): throw malformed
            case .gaveUp: return .gaveUp
            case .broken: return .broken
            case .odd: return .odd
            case .invalid(let reason, let steps): return .invalid(ValueError(path: render(path, steps), reason: reason))
            }
        }
    }

    private static func render(_ root: String, _ steps: [Step]) -> String {
        var path = root
        for step in steps.reversed() {
            switch step {
            case .key(let key): path = ValuePath.member(path, key)
            case .index(let index): path = ValuePath.element(path, index)
            }
        }
        return path
    }
}

/// A place inside a message, collected innermost first on the way out of a failed read.
@usableFromInline
enum Step: Sendable {
    case key(String)
    /// 1-based.
    case index(Int)
}

/// Why a walk stopped.
@usableFromInline
enum Stop: Error {
    case malformed(ProtoReader.Malformed)
    case gaveUp
    case broken
    case odd
    case invalid(reason: String, steps: [Step])

    /// The same stop, one step further out.
    @usableFromInline
    func below(_ step: Step) -> Stop {
        guard case .invalid(let reason, let steps) = self else { return self }
        return .invalid(reason: reason, steps: steps + [step])
    }
}

/// Value's field numbers (Protocol/baton.proto), with the wire type each must have.
@usableFromInline
enum Kind: Int {
    case string = 1, int, double, bool, date, uuid, bytes, array, dictionary

    /// The kind of field `f` of a Value, if it is one (a known number with its own wire type);
    /// one bit test, as it runs for every value read.
    @inlinable @inline(__always)
    init?(_ f: (number: Int, wireType: UInt64)) {
        // Bit `number * 8 + wireType` is set for each kind's field: 1·2, 2·0, 3·1, 4·0, 5·0,
        // 6·2, 7·2, 8·2 and 9·2 (tags 10, 16, 25, 32, 40, 50, 58, 66 and 74).
        let tag = f.number &<< 3 | Int(truncatingIfNeeded: f.wireType)
        guard f.number >= 1, f.number <= 9, f.wireType < 8 else { return nil }
        let bits: (low: UInt64, high: UInt64) = (0x0404_0101_0201_0400, 0x404)
        let set = tag < 64 ? bits.low &>> UInt64(tag) : bits.high &>> UInt64(tag - 64)
        guard set & 1 == 1 else { return nil }
        self.init(rawValue: f.number)
    }
}

// Inlinable, so that a sink of another module (a Lua table's) gets the walk specialized for
// it: unspecialized, the walk looks up generic metadata at every step.
@usableFromInline
struct Walker {
    /// Whether every Value rule is checked.
    @usableFromInline let strict: Bool

    @inlinable
    init(_ mode: ValueReader.Mode) {
        strict = mode == .strict
    }

    @inlinable @inline(__always)
    func proto<T>(_ body: () throws(ProtoReader.Malformed) -> T) throws(Stop) -> T {
        do throws(ProtoReader.Malformed) {
            return try body()
        } catch {
            throw .malformed(error)
        }
    }

    /// `units`: the Dictionary message's nesting, as protobuf parsers count it.
    @inlinable
    mutating func dictionary<S: ValueSink>(_ bytes: UnsafeRawBufferPointer, depth: Int, units: Int, into sink: inout S) throws(Stop) {
        if strict, depth >= ValueReader.maxDepth { throw .broken }
        try nest(units)
        let count = S.needsCounts ? try proto { () throws(ProtoReader.Malformed) in try Self.count(bytes) } : 0
        guard var members = sink.beginDictionary(count: count) else { throw .gaveUp }
        // The keys, for the check that none repeats: on the stack for the usual handful (Swift's
        // temporary allocations go to the heap past 1 KiB), gathered again beyond.
        let room = strict ? max(1, min(S.needsCounts ? count : bytes.count / 2, Self.keysOnStack)) : 1
        try withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer.self, capacity: room) { keys throws(Stop) in
            var n = 0
            var r = ProtoReader(bytes)
            while let f = try proto({ () throws(ProtoReader.Malformed) in try r.nextField() }) {
                guard Self.isMessage(f), f.number == 1 else {
                    try proto { () throws(ProtoReader.Malformed) in try r.skip(f.wireType) }
                    continue
                }
                let entryBytes = try proto { () throws(ProtoReader.Malformed) in try r.lengthDelimited() }
                let key = try entry(entryBytes, depth: depth, units: units + 1, into: &sink, members: &members)
                if strict {
                    if n < room { keys[n] = key }
                    n += 1
                }
            }
            guard strict else { return }
            let repeated = n <= room
                ? Self.hasRepeatedKey(UnsafeBufferPointer(rebasing: keys[..<n]))
                : Self.keys(of: bytes).withUnsafeBufferPointer { Self.hasRepeatedKey($0) }
            if repeated { throw .broken }
        }
        sink.endDictionary(members)
    }

    /// One entry; returns its key's bytes.
    @inlinable @inline(__always)
    mutating func entry<S: ValueSink>(
        _ bytes: UnsafeRawBufferPointer, depth: Int, units: Int, into sink: inout S, members: inout S.DictionaryState
    ) throws(Stop) -> UnsafeRawBufferPointer {
        try nest(units)
        var key: UnsafeRawBufferPointer? = nil
        var value: UnsafeRawBufferPointer? = nil
        var r = ProtoReader(bytes)
        while let f = try proto({ () throws(ProtoReader.Malformed) in try r.nextField() }) {
            let number = Self.isMessage(f) ? f.number : 0
            guard number == 1 || number == 2 else {
                try proto { () throws(ProtoReader.Malformed) in try r.skip(f.wireType) }
                continue
            }
            let field = try proto { () throws(ProtoReader.Malformed) in try r.lengthDelimited() }
            // A field seen twice: proto3 keeps the last key, and merges two values.
            if number == 1 {
                guard key == nil else { throw .odd }
                key = field
            } else {
                guard value == nil else { throw .odd }
                value = field
            }
        }
        // proto3 leaves an empty key out.
        let keyBytes = key ?? UnsafeRawBufferPointer(start: nil, count: 0)
        guard UTF8Validation.isValid(keyBytes) else { throw .malformed(ProtoReader.Malformed("field 1 is not valid UTF-8")) }
        sink.key(keyBytes, in: &members)
        do throws(Stop) {
            guard let value else { throw .invalid(reason: "value has no kind", steps: []) }
            _ = try self.value(value, depth: depth + 1, units: units + 1, into: &sink)
        } catch {
            throw error.below(.key(String(decoding: keyBytes, as: UTF8.self)))
        }
        sink.endMember(of: &members)
        return keyBytes
    }

    /// One value; returns its kind.
    @inlinable
    mutating func value<S: ValueSink>(
        _ bytes: UnsafeRawBufferPointer, depth: Int, units: Int, into sink: inout S
    ) throws(Stop) -> Kind {
        try nest(units)
        var found: Kind? = nil
        var scalar: UInt64 = 0
        var payload = UnsafeRawBufferPointer(start: nil, count: 0)
        var r = ProtoReader(bytes)
        while let f = try proto({ () throws(ProtoReader.Malformed) in try r.nextField() }) {
            guard let kind = Kind(f) else {
                try proto { () throws(ProtoReader.Malformed) in try r.skip(f.wireType) }
                continue
            }
            // A oneof seen twice: proto3 keeps the last, or merges two of one message kind.
            guard found == nil else { throw .odd }
            found = kind
            switch f.wireType {
            case 0: scalar = try proto { () throws(ProtoReader.Malformed) in try r.varint() }
            case 1: scalar = try proto { () throws(ProtoReader.Malformed) in try r.fixed64() }
            default: payload = try proto { () throws(ProtoReader.Malformed) in try r.lengthDelimited() }
            }
        }
        guard let found else { throw .invalid(reason: "value has no kind", steps: []) }
        switch found {
        case .string:
            guard UTF8Validation.isValid(payload) else { throw .malformed(ProtoReader.Malformed("field 1 is not valid UTF-8")) }
            sink.string(payload)
        case .int: sink.int(ProtoReader.zigZag(scalar))
        case .double: sink.double(Double(bitPattern: scalar))
        case .bool: sink.bool(scalar != 0)
        case .date: sink.date(microseconds: ProtoReader.zigZag(scalar))
        case .uuid:
            guard payload.count == 16 else { throw .invalid(reason: "uuid must be 16 bytes, got \(payload.count)", steps: []) }
            sink.uuid(payload)
        case .bytes: sink.bytes(payload)
        case .array: try array(payload, depth: depth, units: units + 1, into: &sink)
        case .dictionary: try dictionary(payload, depth: depth, units: units + 1, into: &sink)
        }
        return found
    }

    @inlinable
    mutating func array<S: ValueSink>(_ bytes: UnsafeRawBufferPointer, depth: Int, units: Int, into sink: inout S) throws(Stop) {
        if strict, depth >= ValueReader.maxDepth { throw .broken }
        try nest(units)
        let count = S.needsCounts ? try proto { () throws(ProtoReader.Malformed) in try Self.count(bytes) } : 0
        guard var elements = sink.beginArray(count: count) else { throw .gaveUp }
        var first: Kind? = nil
        var index = 0
        var r = ProtoReader(bytes)
        while let f = try proto({ () throws(ProtoReader.Malformed) in try r.nextField() }) {
            guard Self.isMessage(f), f.number == 1 else {
                try proto { () throws(ProtoReader.Malformed) in try r.skip(f.wireType) }
                continue
            }
            let element = try proto { () throws(ProtoReader.Malformed) in try r.lengthDelimited() }
            index += 1
            let kind: Kind
            do throws(Stop) {
                kind = try value(element, depth: depth + 1, units: units + 1, into: &sink)
            } catch {
                throw error.below(.index(index))
            }
            if let first {
                if strict, kind != first { throw .broken }
            } else {
                first = kind
            }
            sink.endElement(index, of: &elements)
        }
        sink.endArray(elements)
    }

    /// Fails as protobuf parsers do for messages nested past their limit.
    @inlinable @inline(__always)
    func nest(_ units: Int) throws(Stop) {
        if units > ProtoReader.maxDepth {
            throw .malformed(ProtoReader.Malformed("messages nested deeper than \(ProtoReader.maxDepth)"))
        }
    }

    /// Whether `f` is length-delimited, as every message field here is. A known number with
    /// another wire type is an unknown field, as protobuf's parsers take it.
    @inlinable @inline(__always)
    static func isMessage(_ f: (number: Int, wireType: UInt64)) -> Bool {
        f.wireType == 2
    }

    /// How many length-delimited fields 1 `bytes` holds (a Dictionary's entries, an Array's
    /// elements).
    @inlinable
    static func count(_ bytes: UnsafeRawBufferPointer) throws(ProtoReader.Malformed) -> Int {
        var r = ProtoReader(bytes)
        var n = 0
        while let f = try r.nextField() {
            if f.wireType == 2 {
                if f.number == 1 { n += 1 }
                _ = try r.lengthDelimited()
            } else {
                try r.skip(f.wireType)
            }
        }
        return n
    }

    /// How many keys a dictionary's check keeps on the stack.
    @usableFromInline
    static let keysOnStack = 32

    /// The keys of the entries of `bytes`, a Dictionary that read without error.
    @usableFromInline
    static func keys(of bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        var keys: [UnsafeRawBufferPointer] = []
        var r = ProtoReader(bytes)
        while let f = try? r.nextField() {
            guard isMessage(f), f.number == 1, let entry = try? r.lengthDelimited() else {
                _ = try? r.skip(f.wireType)
                continue
            }
            var key = UnsafeRawBufferPointer(start: nil, count: 0)
            var e = ProtoReader(entry)
            while let g = try? e.nextField() {
                if isMessage(g), g.number == 1, let k = try? e.lengthDelimited() {
                    key = k
                } else {
                    _ = try? e.skip(g.wireType)
                }
            }
            keys.append(key)
        }
        return keys
    }

    /// Whether two keys are equal: pairwise for the usual handful, sorted beyond.
    @usableFromInline
    static func hasRepeatedKey(_ keys: UnsafeBufferPointer<UnsafeRawBufferPointer>) -> Bool {
        let n = keys.count
        if n < 2 { return false }
        if n <= 16 {
            for i in 1..<n {
                for j in 0..<i where same(keys[i], keys[j]) { return true }
            }
            return false
        }
        let sorted = keys.sorted { a, b in a.lexicographicallyPrecedes(b) }
        for i in 1..<n where same(sorted[i], sorted[i - 1]) { return true }
        return false
    }

    @inline(__always)
    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
        return memcmp(pa, pb, a.count) == 0
    }
}

/// The walk of bytes that passed a strict read already (``ValueReader/Mode/trusted``): what
/// the strict read made sure of (well-formed fields, one key and one value an entry, one kind a
/// value, nesting within the limits) is not looked at again, so a message goes into a sink
/// (a Lua table, the agent's hot path) in one lean pass. Unknown fields are still skipped.
@usableFromInline
enum TrustedWalk {
    @inlinable
    static func dictionary<S: ValueSink>(_ bytes: UnsafeRawBufferPointer, into sink: inout S) -> Bool {
        let count = S.needsCounts ? try! Walker.count(bytes) : 0
        guard var members = sink.beginDictionary(count: count) else { return false }
        var r = ProtoReader(bytes)
        while let f = try! r.nextField() {
            guard f.wireType == 2, f.number == 1 else {
                try! r.skip(f.wireType)
                continue
            }
            var entry = ProtoReader(try! r.lengthDelimited())
            var key = UnsafeRawBufferPointer(start: nil, count: 0), value = key
            while let g = try! entry.nextField() {
                if g.wireType == 2, g.number == 1 {
                    key = try! entry.lengthDelimited()
                } else if g.wireType == 2, g.number == 2 {
                    value = try! entry.lengthDelimited()
                } else {
                    try! entry.skip(g.wireType)
                }
            }
            sink.key(key, in: &members)
            guard Self.value(value, into: &sink) != nil else { return false }
            sink.endMember(of: &members)
        }
        sink.endDictionary(members)
        return true
    }

    /// One value into `sink`; its kind, nil when the sink gave up.
    @inlinable
    static func value<S: ValueSink>(_ bytes: UnsafeRawBufferPointer, into sink: inout S) -> Kind? {
        var r = ProtoReader(bytes)
        while let f = try! r.nextField() {
            guard let kind = Kind(f) else {
                try! r.skip(f.wireType)
                continue
            }
            switch kind {
            case .string: sink.string(try! r.lengthDelimited())
            case .int: sink.int(ProtoReader.zigZag(try! r.varint()))
            case .double: sink.double(Double(bitPattern: try! r.fixed64()))
            case .bool: sink.bool(try! r.varint() != 0)
            case .date: sink.date(microseconds: ProtoReader.zigZag(try! r.varint()))
            case .uuid: sink.uuid(try! r.lengthDelimited())
            case .bytes: sink.bytes(try! r.lengthDelimited())
            case .array: guard array(try! r.lengthDelimited(), into: &sink) else { return nil }
            case .dictionary: guard dictionary(try! r.lengthDelimited(), into: &sink) else { return nil }
            }
            return kind
        }
        preconditionFailure("trusted bytes hold a value without a kind")
    }

    @inlinable
    static func array<S: ValueSink>(_ bytes: UnsafeRawBufferPointer, into sink: inout S) -> Bool {
        let count = S.needsCounts ? try! Walker.count(bytes) : 0
        guard var elements = sink.beginArray(count: count) else { return false }
        var index = 0
        var r = ProtoReader(bytes)
        while let f = try! r.nextField() {
            guard f.wireType == 2, f.number == 1 else {
                try! r.skip(f.wireType)
                continue
            }
            index += 1
            guard value(try! r.lengthDelimited(), into: &sink) != nil else { return false }
            sink.endElement(index, of: &elements)
        }
        sink.endArray(elements)
        return true
    }
}
