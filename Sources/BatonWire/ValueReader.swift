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
    package static let maxDepth = Value.maxDepth

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
            return try refusal(error, of: bytes, units: units)
        case .gaveUp:
            preconditionFailure("a ValueBuilder never gives up")
        case .odd:
            return try canonical(bytes, path: path, units: units)
        case .broken:
            var lenient = ValueBuilder()
            switch try read(dictionary: bytes, into: &lenient, mode: .lenient, path: path, units: units) {
            case .invalid(let error):
                return try refusal(error, of: bytes, units: units)
            case .odd:
                // A field proto3 merges, past the broken rule: the dictionary as merged.
                return try canonical(bytes, path: path, units: units)
            case .read, .gaveUp, .broken:
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

    /// The generated types' reading of a dictionary with a field proto3 merges, written back in
    /// the common form, then read again.
    private static func canonical(
        _ bytes: UnsafeRawBufferPointer, path: String, units: Int
    ) throws(ProtoReader.Malformed) -> Result<ValueDictionary, ValueError> {
        var wire = Baton_V1_Dictionary()
        var reader = ProtoReader(bytes, depth: units)
        try wire.merge(from: &reader)
        var writer = ProtoWriter()
        wire.encode(to: &writer)
        return try writer.withBytes { canonical throws(ProtoReader.Malformed) in
            try values(ofDictionary: canonical, path: path, units: units)
        }
    }

    /// `error`, found before the read reached the end of `bytes`: unless what is left is not
    /// protobuf at all (then the message is malformed, as protobuf's parsers find it). A message
    /// nested past the limit is not read further: it is refused for that alone.
    private static func refusal(
        _ error: ValueError, of bytes: UnsafeRawBufferPointer, units: Int
    ) throws(ProtoReader.Malformed) -> Result<ValueDictionary, ValueError> {
        if !error.isOverLimit {
            var wire = Baton_V1_Dictionary()
            var reader = ProtoReader(bytes, depth: units)
            try wire.merge(from: &reader)
        }
        return .failure(error)
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
