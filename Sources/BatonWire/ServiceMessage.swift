import BatonCore

/// A request's message on an app-service channel: usually still the bytes it came in, every
/// Value rule already checked, so that a receiver that wants it in another form (a Lua table)
/// reads it straight into that form with ``read(into:)``; otherwise Values, or why the message
/// breaks the rules (then the request is answered `failure` and the connection lives on).
public struct ServiceMessage: Sendable, Equatable {
    @usableFromInline
    enum Storage: Sendable {
        /// The fields of a `Dictionary` message, checked by ``ValueReader`` in strict mode.
        case checked([UInt8])
        case converted(Result<ValueDictionary, ValueError>)
    }

    @usableFromInline let storage: Storage

    /// A message of these Values.
    public init(_ values: ValueDictionary) {
        storage = .converted(.success(values))
    }

    /// A message already converted, or why it could not be.
    public init(_ converted: Result<ValueDictionary, ValueError>) {
        storage = .converted(converted)
    }

    /// The message the `Dictionary` fields `bytes` hold: kept as bytes when they pass every
    /// rule as they stand, else converted (which finds the words for what is wrong).
    ///
    /// - Throws: ``ProtoReader/Malformed`` for bytes that are not a `Dictionary` message.
    init(fields bytes: UnsafeRawBufferPointer, units: Int) throws(ProtoReader.Malformed) {
        var check = CheckingSink()
        if try ValueReader.read(dictionary: bytes, into: &check, units: units) == .read {
            storage = .checked(Array(bytes))
        } else {
            storage = .converted(try ValueReader.values(ofDictionary: bytes, units: units))
        }
    }

    /// The message as Values, or why it breaks the Value rules.
    public var values: Result<ValueDictionary, ValueError> {
        switch storage {
        case .converted(let result):
            return result
        case .checked(let bytes):
            var builder = ValueBuilder()
            let outcome = bytes.withUnsafeBytes { try? ValueReader.read(dictionary: $0, into: &builder, mode: .trusted) }
            precondition(outcome == .read, "checked message fields no longer read")
            return .success(builder.dictionary)
        }
    }

    /// Reads the message into `sink` when it is still in its checked bytes: true when read,
    /// false when the sink gave up; nil (nothing read) when it holds Values instead.
    @inlinable
    package func read<S: ValueSink>(into sink: inout S) -> Bool? {
        guard case .checked(let bytes) = storage else { return nil }
        let outcome = bytes.withUnsafeBytes { try? ValueReader.read(dictionary: $0, into: &sink, mode: .trusted) }
        return outcome == .read
    }

    /// Whether the message is in its checked bytes (and so good).
    package var isChecked: Bool {
        if case .checked = storage { return true }
        return false
    }

    /// Calls `body` with the checked `Dictionary` fields; nil when it holds Values instead.
    func withCheckedFields<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard case .checked(let bytes) = storage else { return nil }
        return try bytes.withUnsafeBytes(body)
    }

    /// Whether the two messages hold the same Values (or the same error).
    public static func == (a: ServiceMessage, b: ServiceMessage) -> Bool {
        a.values == b.values
    }
}
