// ValueReader's walk of checked bytes.

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
