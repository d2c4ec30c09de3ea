#if canImport(Glibc)
import Glibc
#endif
import BatonCore

// The strict and lenient walk of ValueReader: every Value rule checked on the way, with the
// path to the first one broken.

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
        if depth >= ValueReader.maxDepth { throw Self.tooDeep(strict) }
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
        if depth >= ValueReader.maxDepth { throw Self.tooDeep(strict) }
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

    /// A container past ``ValueReader/maxDepth``: a broken rule for the strict walk; for the
    /// lenient one, the error itself (it goes no deeper, however deep the bytes go).
    @inlinable
    static func tooDeep(_ strict: Bool) -> Stop {
        strict ? .broken : .invalid(reason: "nested deeper than \(ValueReader.maxDepth) levels", steps: [])
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
