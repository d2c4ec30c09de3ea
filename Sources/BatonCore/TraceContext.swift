/// A W3C trace context (`traceparent`, https://www.w3.org/TR/trace-context/): the trace a run
/// belongs to, the run's own span in it, and the span that started it, if any.
public struct TraceContext: Sendable, Equatable {
    /// 32 lowercase hex digits, never all zero.
    public let traceID: String
    /// This run's span: 16 lowercase hex digits, never all zero.
    public let spanID: String
    /// The caller's span, from the `traceparent` this run was given; nil for a new trace.
    public let parentSpanID: String?
    /// The trace flags (bit 0: sampled), as given or 01 for a new trace.
    public let flags: String

    /// A context for a new span: in the trace `traceparent` names when it is valid (its span
    /// becomes the parent), else in a new trace.
    public init(continuing traceparent: String?) {
        var generator = SystemRandomNumberGenerator()
        let span = Self.randomHex(bytes: 8, using: &generator)
        if let traceparent, let parsed = Self.parse(traceparent) {
            (traceID, parentSpanID, flags) = (parsed.traceID, parsed.spanID, parsed.flags)
        } else {
            (traceID, parentSpanID, flags) = (Self.randomHex(bytes: 16, using: &generator), nil, "01")
        }
        spanID = span
    }

    /// The `traceparent` that passes this context on: callees' spans become children of ours.
    public var traceparent: String { "00-\(traceID)-\(spanID)-\(flags)" }

    /// The parts of a `traceparent` header of version 00 (or a later version, read as 00
    /// reads it), or nil when it is not one: wrong lengths, not lowercase hex, an all-zero id,
    /// or version ff.
    public static func parse(_ header: String) -> (traceID: String, spanID: String, flags: String)? {
        let parts = header.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[0] != "ff",
              parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
              parts[0] == "00" ? parts.count == 4 : true,
              parts.prefix(4).allSatisfy({ $0.allSatisfy(\.isLowercaseHexDigit) }),
              parts[1].contains(where: { $0 != "0" }), parts[2].contains(where: { $0 != "0" })
        else { return nil }
        return (String(parts[1]), String(parts[2]), String(parts[3]))
    }

    private static func randomHex(bytes: Int, using generator: inout SystemRandomNumberGenerator) -> String {
        var out = ""
        repeat {
            out = (0..<bytes).map { _ in
                let byte = UInt8.random(in: 0...255, using: &generator)
                return String(byte >> 4, radix: 16) + String(byte & 15, radix: 16)
            }.joined()
        } while out.allSatisfy { $0 == "0" }
        return out
    }
}

extension Character {
    fileprivate var isLowercaseHexDigit: Bool { ("0"..."9").contains(self) || ("a"..."f").contains(self) }
}
