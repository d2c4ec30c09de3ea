#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonCore
import NIOCore

/// A ServiceRequest as a connection's delegate is asked it: the ids and the ``ServiceMessage``.
public struct ServiceRequestFrame: Sendable, Equatable {
    /// The channel the request is on.
    public var channelID: UInt64
    /// The request's id, which its answer carries.
    public var requestID: UInt64
    /// The message; one that breaks the Value rules (say, a mixed array) is answered `failure`
    /// and the connection lives on. An absent message is the empty one.
    public var message: ServiceMessage

    /// A request with these ids and this message.
    public init(channelID: UInt64, requestID: UInt64, message: ServiceMessage) {
        self.channelID = channelID
        self.requestID = requestID
        self.message = message
    }

    /// What `wire` carries, its message converted by ``ValueDictionary/init(wire:path:maxDepth:)``.
    public init(wire: Baton_V1_ServiceRequest) {
        self.init(channelID: wire.channelID, requestID: wire.requestID, message: ServiceMessage(convert(wire.message)))
    }
}

/// A request's message: usually still its bytes, already checked against every Value rule, so
/// that a receiver that wants it in another form (a Lua table) need not build Values first;
/// otherwise what converting it gave.
public struct ServiceMessage: Sendable, Equatable {
    private enum Storage: Sendable {
        /// The fields of a `Dictionary` message in the common form, every Value rule checked.
        case encoded([UInt8])
        case converted(Result<ValueDictionary, ValueError>)
    }

    private let storage: Storage

    /// A message converted already (or why it could not be).
    public init(_ converted: Result<ValueDictionary, ValueError>) {
        storage = .converted(converted)
    }

    /// The fields of a `Dictionary` message that ``ServiceFrameReader`` has checked.
    init(checkedFields bytes: UnsafeRawBufferPointer) {
        storage = .encoded(Array(bytes))
    }

    /// The message as Values, or why it breaks the Value rules.
    public var values: Result<ValueDictionary, ValueError> {
        switch storage {
        case .converted(let result):
            return result
        case .encoded(let bytes):
            return bytes.withUnsafeBytes { ServiceFrameReader.values(ofCheckedFields: $0) }
        }
    }

    /// Whether the message holds its checked fields (and so is a good message).
    package var hasCheckedFields: Bool {
        if case .encoded = storage { return true }
        return false
    }

    /// Calls `body` with the message's `Dictionary` fields, when it holds them (checked against
    /// every Value rule: Protocol/baton.proto's Value, in the form every serializer writes);
    /// nil when it holds converted Values instead.
    package func withCheckedFields<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard case .encoded(let bytes) = storage else { return nil }
        return try bytes.withUnsafeBytes(body)
    }

    /// Whether the two messages hold the same Values (or the same error).
    public static func == (a: ServiceMessage, b: ServiceMessage) -> Bool {
        a.values == b.values
    }
}

/// A ServiceResponse with its message already converted to Values (or why it breaks the Value
/// rules): what a request on a channel gets back.
public struct ServiceResponseFrame: Sendable, Equatable {
    /// The channel the request was on.
    public var channelID: UInt64
    /// The id of the request this answers.
    public var requestID: UInt64
    /// How the request went.
    public var status: Baton_V1_ResponseStatus
    /// The message (the empty one when the frame has none), or why it breaks the Value rules.
    /// Only a `success` response's message means anything.
    public var message: Result<ValueDictionary, ValueError>
    /// For people: why, when the status is not `success`.
    public var detail: String

    /// A response with these fields.
    public init(
        channelID: UInt64, requestID: UInt64, status: Baton_V1_ResponseStatus,
        message: Result<ValueDictionary, ValueError> = .success([:]), detail: String = ""
    ) {
        self.channelID = channelID
        self.requestID = requestID
        self.status = status
        self.message = message
        self.detail = detail
    }

    /// What `wire` carries, its message converted by ``ValueDictionary/init(wire:path:maxDepth:)``.
    public init(wire: Baton_V1_ServiceResponse) {
        self.init(
            channelID: wire.channelID, requestID: wire.requestID, status: wire.status,
            message: convert(wire.message), detail: wire.detail)
    }
}

private func convert(_ wire: Baton_V1_Dictionary) -> Result<ValueDictionary, ValueError> {
    do {
        return .success(try ValueDictionary(wire: wire))
    } catch {
        return .failure(error)
    }
}

// MARK: decoding service frames straight into Values

/// Reads the frames that carry messages (ServiceRequest, ServiceResponse) straight into
/// ``ValueDictionary``, without the generated types in between, when they are in the form every
/// serializer writes: fields in number order, each once, every Value with exactly one kind, no
/// unknown fields, nothing ``Value/validate(path:maxDepth:)`` would look at twice (mixed arrays,
/// repeated keys, deep nesting). Anything else returns nil, and the caller takes the general
/// path, which gives every oddity its usual treatment and every error its usual words.
enum ServiceFrameReader {
    /// Value's nesting limit, as ``ValueDictionary/init(wire:path:maxDepth:)`` applies it.
    static let maxDepth = 64

    /// A ServiceRequest frame's payload (one serialized `Frame`), or nil.
    static func request(_ payload: UnsafeRawBufferPointer) -> ServiceRequestFrame? {
        do {
            var r = try body(payload, field: 9)
            var channelID: UInt64 = 0, requestID: UInt64 = 0
            var message = UnsafeRawBufferPointer(start: nil, count: 0)
            var last = 0
            while let f = try r.nextField() {
                guard f.number > last else { throw notCanonical }
                last = f.number
                switch (f.number, f.wireType) {
                case (1, 0): channelID = try r.varint()
                case (2, 0): requestID = try r.varint()
                case (3, 2):
                    message = try r.lengthDelimited()
                    try checkDictionary(message, depth: 0)
                default: throw notCanonical
                }
            }
            return ServiceRequestFrame(channelID: channelID, requestID: requestID, message: ServiceMessage(checkedFields: message))
        } catch {
            return nil
        }
    }

    /// A ServiceResponse frame's payload (one serialized `Frame`), or nil.
    static func response(_ payload: UnsafeRawBufferPointer) -> ServiceResponseFrame? {
        do {
            var r = try body(payload, field: 10)
            var response = ServiceResponseFrame(channelID: 0, requestID: 0, status: .unknown)
            var last = 0
            while let f = try r.nextField() {
                guard f.number > last else { throw notCanonical }
                last = f.number
                switch (f.number, f.wireType) {
                case (1, 0): response.channelID = try r.varint()
                case (2, 0): response.requestID = try r.varint()
                case (3, 0): response.status = Baton_V1_ResponseStatus(rawValue: try r.enumValue(f)) ?? .unknown
                case (4, 2): response.message = .success(try dictionary(try r.lengthDelimited(), depth: 0))
                case (5, 2): response.detail = try r.string(f)
                default: throw notCanonical
                }
            }
            return response
        } catch {
            return nil
        }
    }

    private static let notCanonical = ProtoReader.Malformed("not in canonical form")

    /// The Values in fields that ``checkDictionary(_:depth:)`` passed.
    static func values(ofCheckedFields bytes: UnsafeRawBufferPointer) -> Result<ValueDictionary, ValueError> {
        if let members = try? dictionary(bytes, depth: 0) { return .success(members) }
        // Not reached for checked fields; the general path stays the judge all the same.
        var wire = Baton_V1_Dictionary()
        var reader = ProtoReader(bytes, depth: 1)
        do {
            try wire.merge(from: &reader)
        } catch {
            return .failure(ValueError(path: "message", reason: "\(error)"))
        }
        return convert(wire)
    }

    // MARK: checking without building

    /// Passes exactly the `Dictionary` fields ``dictionary(_:depth:)`` reads (and throws for
    /// everything else), building nothing: a dictionary of more than 16 members is left to the
    /// general path.
    static func checkDictionary(_ bytes: UnsafeRawBufferPointer, depth: Int) throws(ProtoReader.Malformed) {
        guard depth < maxDepth else { throw notCanonical }
        try withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer.self, capacity: 16) { keys throws(ProtoReader.Malformed) in
            var r = ProtoReader(bytes)
            var n = 0
            while let f = try r.nextField() {
                guard f.number == 1, f.wireType == 2, n < 16 else { throw notCanonical }
                var entry = ProtoReader(try r.lengthDelimited())
                guard var g = try entry.nextField() else { throw notCanonical }
                var key = UnsafeRawBufferPointer(start: nil, count: 0)
                if g.number == 1, g.wireType == 2 {
                    key = try entry.lengthDelimited()
                    guard UTF8Validation.isValid(key) else { throw notCanonical }
                    guard let next = try entry.nextField() else { throw notCanonical }
                    g = next
                }
                guard g.number == 2, g.wireType == 2 else { throw notCanonical }
                _ = try checkValue(try entry.lengthDelimited(), depth: depth + 1)
                guard entry.isAtEnd else { throw notCanonical }
                for j in 0..<n where keys[j].elementsEqual(key) { throw notCanonical }
                keys[n] = key
                n += 1
            }
        }
    }

    private static func checkArray(_ bytes: UnsafeRawBufferPointer, depth: Int) throws(ProtoReader.Malformed) {
        guard depth < maxDepth else { throw notCanonical }
        var r = ProtoReader(bytes)
        var first = 0
        while let f = try r.nextField() {
            guard f.number == 1, f.wireType == 2 else { throw notCanonical }
            let kind = try checkValue(try r.lengthDelimited(), depth: depth + 1)
            if first == 0 {
                first = kind
            } else if kind != first {
                throw notCanonical
            }
        }
    }

    /// Checks one `Value`; returns its kind's field number (one kind per number).
    private static func checkValue(_ bytes: UnsafeRawBufferPointer, depth: Int) throws(ProtoReader.Malformed) -> Int {
        var r = ProtoReader(bytes)
        guard let f = try r.nextField() else { throw notCanonical }
        switch (f.number, f.wireType) {
        case (1, 2): guard UTF8Validation.isValid(try r.lengthDelimited()) else { throw notCanonical }
        case (2, 0), (4, 0), (5, 0): _ = try r.varint()
        case (3, 1): _ = try r.fixed64()
        case (6, 2): guard try r.lengthDelimited().count == 16 else { throw notCanonical }
        case (7, 2): _ = try r.lengthDelimited()
        case (8, 2): try checkArray(try r.lengthDelimited(), depth: depth)
        case (9, 2): try checkDictionary(try r.lengthDelimited(), depth: depth)
        default: throw notCanonical
        }
        guard r.isAtEnd else { throw notCanonical }
        return f.number
    }

    /// A reader over the body of a frame that is exactly field `field` (a message), nothing more.
    private static func body(_ payload: UnsafeRawBufferPointer, field: Int) throws(ProtoReader.Malformed) -> ProtoReader {
        var outer = ProtoReader(payload)
        guard let f = try outer.nextField(), f.number == field, f.wireType == 2 else { throw notCanonical }
        let body = try outer.lengthDelimited()
        guard outer.isAtEnd else { throw notCanonical }
        return ProtoReader(body, depth: 1)
    }

    /// How many fields `bytes` holds (0 if it is malformed: the reading that follows fails).
    private static func fieldCount(_ bytes: UnsafeRawBufferPointer) -> Int {
        var r = ProtoReader(bytes)
        var n = 0
        do {
            while let f = try r.nextField() {
                try r.skip(f.wireType)
                n += 1
            }
        } catch {
            return 0
        }
        return n
    }

    private static func dictionary(_ bytes: UnsafeRawBufferPointer, depth: Int) throws(ProtoReader.Malformed) -> ValueDictionary {
        guard depth < maxDepth else { throw notCanonical }
        var members = ValueDictionary(minimumCapacity: fieldCount(bytes))
        var r = ProtoReader(bytes)
        while let f = try r.nextField() {
            guard f.number == 1, f.wireType == 2 else { throw notCanonical }
            var entry = ProtoReader(try r.lengthDelimited())
            // proto3 leaves an empty key out; the value must be there.
            guard var g = try entry.nextField() else { throw notCanonical }
            var key = ""
            if g.number == 1, g.wireType == 2 {
                key = try entry.string(g)
                guard let next = try entry.nextField() else { throw notCanonical }
                g = next
            }
            guard g.number == 2, g.wireType == 2 else { throw notCanonical }
            let member = try value(try entry.lengthDelimited(), depth: depth + 1)
            guard entry.isAtEnd else { throw notCanonical }
            members.appendUnchecked(key, member)
        }
        if hasRepeatedKey(members) { throw notCanonical }
        return members
    }

    /// As the general path looks: pairwise for the usual handful, hashed beyond.
    private static func hasRepeatedKey(_ members: ValueDictionary) -> Bool {
        let n = members.count
        if n < 2 { return false }
        if n > 16 { return members.firstDuplicateKey != nil }
        for i in 1..<n {
            let key = members.key(at: i)
            for j in 0..<i where members.key(at: j) == key { return true }
        }
        return false
    }

    private static func array(_ bytes: UnsafeRawBufferPointer, depth: Int) throws(ProtoReader.Malformed) -> [Value] {
        guard depth < maxDepth else { throw notCanonical }
        var items: [Value] = []
        items.reserveCapacity(fieldCount(bytes))
        var r = ProtoReader(bytes)
        var first: Value.Kind? = nil
        while let f = try r.nextField() {
            guard f.number == 1, f.wireType == 2 else { throw notCanonical }
            let item = try value(try r.lengthDelimited(), depth: depth + 1)
            if let first {
                guard item.kind == first else { throw notCanonical }
            } else {
                first = item.kind
            }
            items.append(item)
        }
        return items
    }

    private static func value(_ bytes: UnsafeRawBufferPointer, depth: Int) throws(ProtoReader.Malformed) -> Value {
        var r = ProtoReader(bytes)
        guard let f = try r.nextField() else { throw notCanonical }
        let value: Value
        switch (f.number, f.wireType) {
        case (1, 2): value = .string(try r.string(f))
        case (2, 0): value = .int(try r.sint64(f))
        case (3, 1): value = .double(try r.double(f))
        case (4, 0): value = .bool(try r.bool(f))
        case (5, 0): value = .date(WireDate.date(try r.sint64(f)))
        case (6, 2):
            let raw = try r.lengthDelimited()
            guard raw.count == 16 else { throw notCanonical }
            value = .uuid(UUID(uuid: raw.loadUnaligned(as: uuid_t.self)))
        case (7, 2): value = .bytes([UInt8](try r.lengthDelimited()))
        case (8, 2): value = .array(try array(try r.lengthDelimited(), depth: depth))
        case (9, 2): value = .dictionary(try dictionary(try r.lengthDelimited(), depth: depth))
        default: throw notCanonical
        }
        guard r.isAtEnd else { throw notCanonical }
        return value
    }
}

// MARK: writing Values straight from BatonCore's types

extension ProtoWriter {
    /// The fields of a `Value` message for `value`: the bytes `Baton_V1_Value(value)` encodes to.
    mutating func valueFields(_ value: Value) {
        switch value {
        case .string(let s): presentString(1, s)
        case .int(let i): presentSInt64(2, i)
        case .double(let d): presentDouble(3, d)
        case .bool(let b): presentVarint(4, b ? 1 : 0)
        case .date(let d): presentSInt64(5, WireDate.microseconds(d))
        case .uuid(let u):
            tag(6, .lengthDelimited)
            varint(16)
            withUnsafeBytes(of: u.uuid) { raw($0) }
        case .bytes(let b):
            tag(7, .lengthDelimited)
            varint(UInt64(b.count))
            b.withUnsafeBytes { raw($0) }
        case .array(let items):
            tag(8, .lengthDelimited)
            lengthPrefixed { w in
                for item in items {
                    w.tag(1, .lengthDelimited)
                    w.lengthPrefixed { $0.valueFields(item) }
                }
            }
        case .dictionary(let members):
            tag(9, .lengthDelimited)
            lengthPrefixed { $0.dictionaryFields(members) }
        }
    }

    /// The fields of a `Dictionary` message for `dictionary`: the bytes
    /// `Baton_V1_Dictionary(dictionary)` encodes to.
    mutating func dictionaryFields(_ dictionary: ValueDictionary) {
        for (key, value) in dictionary {
            tag(1, .lengthDelimited)
            lengthPrefixed { w in
                w.string(1, key)
                w.tag(2, .lengthDelimited)
                w.lengthPrefixed { $0.valueFields(value) }
            }
        }
    }
}

extension ProtoWriter {
    /// A `Dictionary` entry: `key` (UTF-8), then the `Value` fields `value` writes. False when
    /// `value` gives up (the writer is then to be thrown away).
    package mutating func entry(key: UnsafeRawBufferPointer, value: (inout ProtoWriter) -> Bool) -> Bool {
        var written = true
        tag(1, .lengthDelimited)
        lengthPrefixed { w in
            if key.count > 0 {
                w.tag(1, .lengthDelimited)
                w.varint(UInt64(key.count))
                w.raw(key)
            }
            w.tag(2, .lengthDelimited)
            w.lengthPrefixed { written = value(&$0) }
        }
        return written
    }

    /// A string `Value`'s field, from its UTF-8.
    package mutating func stringValue(_ utf8: UnsafeRawBufferPointer) {
        tag(1, .lengthDelimited)
        varint(UInt64(utf8.count))
        raw(utf8)
    }

    /// A bytes `Value`'s field.
    package mutating func bytesValue(_ bytes: UnsafeRawBufferPointer) {
        tag(7, .lengthDelimited)
        varint(UInt64(bytes.count))
        raw(bytes)
    }

    /// A `Value`'s field for a value of any other kind but array and dictionary.
    package mutating func scalarValue(_ value: Value) {
        valueFields(value)
    }

    /// A dictionary `Value`'s field, its entries written by `entries`. False when `entries`
    /// gives up.
    package mutating func dictionaryValue(_ entries: (inout ProtoWriter) -> Bool) -> Bool {
        var written = true
        tag(9, .lengthDelimited)
        lengthPrefixed { written = entries(&$0) }
        return written
    }
}

extension FrameEncoder {
    /// Appends a `success` ServiceResponse frame whose message's entries `entries` writes
    /// (see ``ProtoWriter/entry(key:value:)``), framed, to `out`; false (nothing appended) when
    /// `entries` gives up.
    ///
    /// - Throws: ``WireError/frameTooLarge(size:limit:)`` over `maxFrameSize`; `out` is then unchanged.
    package static func encodeServiceResponse(
        channelID: UInt64, requestID: UInt64, into out: inout ByteBuffer, maxFrameSize: Int,
        entries: (inout ProtoWriter) -> Bool
    ) throws(WireError) -> Bool {
        var writer = ProtoWriter()
        var written = true
        let size = writer.lengthPrefixed { w in
            w.tag(10, .lengthDelimited)
            w.lengthPrefixed { w in
                w.uint64(1, channelID)
                w.uint64(2, requestID)
                w.enumValue(3, Baton_V1_ResponseStatus.success.rawValue)
                w.tag(4, .lengthDelimited)
                w.lengthPrefixed { written = entries(&$0) }
            }
        }
        guard written else { return false }
        guard size <= maxFrameSize else { throw .frameTooLarge(size: size, limit: maxFrameSize) }
        writer.append(to: &out)
        return true
    }

    /// Appends a ServiceRequest frame carrying `message`, framed, to `out`: the bytes of the
    /// same frame built from the generated types, without building them.
    ///
    /// - Throws: ``WireError/frameTooLarge(size:limit:)`` over `maxFrameSize`; `out` is then unchanged.
    public static func encodeServiceRequest(
        channelID: UInt64, requestID: UInt64, message: ValueDictionary, into out: inout ByteBuffer, maxFrameSize: Int
    ) throws(WireError) {
        var writer = ProtoWriter()
        let size = writer.lengthPrefixed { w in
            w.tag(9, .lengthDelimited)
            w.lengthPrefixed { w in
                w.uint64(1, channelID)
                w.uint64(2, requestID)
                w.tag(3, .lengthDelimited)
                w.lengthPrefixed { $0.dictionaryFields(message) }
            }
        }
        guard size <= maxFrameSize else { throw .frameTooLarge(size: size, limit: maxFrameSize) }
        writer.append(to: &out)
    }

    /// Appends a ServiceResponse frame, framed, to `out`; `message` (nil: none) is written as is,
    /// whatever the status.
    ///
    /// - Throws: ``WireError/frameTooLarge(size:limit:)`` over `maxFrameSize`; `out` is then unchanged.
    public static func encodeServiceResponse(
        channelID: UInt64, requestID: UInt64, status: Baton_V1_ResponseStatus, message: ValueDictionary?, detail: String,
        into out: inout ByteBuffer, maxFrameSize: Int
    ) throws(WireError) {
        var writer = ProtoWriter()
        let size = writer.lengthPrefixed { w in
            w.tag(10, .lengthDelimited)
            w.lengthPrefixed { w in
                w.uint64(1, channelID)
                w.uint64(2, requestID)
                w.enumValue(3, status.rawValue)
                if let message {
                    w.tag(4, .lengthDelimited)
                    w.lengthPrefixed { $0.dictionaryFields(message) }
                }
                w.string(5, detail)
            }
        }
        guard size <= maxFrameSize else { throw .frameTooLarge(size: size, limit: maxFrameSize) }
        writer.append(to: &out)
    }
}
