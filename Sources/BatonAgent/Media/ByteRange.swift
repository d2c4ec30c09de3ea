import Foundation

/// The bytes of a file a `Range` header asks for (RFC 9110 §14.1.2): one range, `bytes=A-B`,
/// `bytes=A-` or `bytes=-N` (the last N). Players ask for one range at a time; a request with
/// several is served whole, as the RFC allows a server to.
struct ByteRange: Equatable {
    /// The first byte and one past the last.
    let lower: Int
    let upper: Int

    var count: Int { upper - lower }

    /// What a `Range` header means for a file of `size` bytes: nil to serve it whole (no
    /// header, not bytes, several ranges, or a form not understood); `.failure` for a range
    /// that lies past the end (416).
    static func parse(_ header: String?, size: Int) -> Result<ByteRange, Unsatisfiable>? {
        guard let header else { return nil }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes="), !text.contains(",") else { return nil }
        let spec = text.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let first = parts[0].trimmingCharacters(in: .whitespaces), last = parts[1].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // The last N bytes.
            guard let suffix = Int(last), suffix > 0 else { return nil }
            guard size > 0 else { return .failure(Unsatisfiable()) }
            return .success(ByteRange(lower: max(0, size - suffix), upper: size))
        }
        guard let lower = Int(first), lower >= 0 else { return nil }
        guard lower < size else { return .failure(Unsatisfiable()) }
        if last.isEmpty { return .success(ByteRange(lower: lower, upper: size)) }
        guard let end = Int(last), end >= lower else { return nil }
        return .success(ByteRange(lower: lower, upper: min(end + 1, size)))
    }

    /// A range past the end of the file.
    struct Unsatisfiable: Error, Equatable {}
}
