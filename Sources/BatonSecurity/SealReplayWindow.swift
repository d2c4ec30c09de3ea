/// Which counters a receiver has opened: the highest, and a 1024-bit map of the ones below it
/// (bit d of the map: counter highest − d). A counter newer than the highest, or within the
/// window and not yet seen, is new; anything else is a replay.
struct SealReplayWindow: Sendable {
    static let size: UInt64 = 1024
    private static let words = Int(size / 64)

    private var highest: UInt64?
    private var seen = [UInt64](repeating: 0, count: words)

    /// Whether `counter` has not been opened and is not too old to tell.
    func isNew(_ counter: UInt64) -> Bool {
        guard let highest, counter <= highest else { return true }
        let distance = highest - counter
        guard distance < Self.size else { return false }
        return seen[Int(distance / 64)] & (1 << (distance % 64)) == 0
    }

    /// Records `counter` as opened (it must be new).
    mutating func accept(_ counter: UInt64) {
        guard let highest, counter <= highest else {
            shift(by: highest.map { counter - $0 } ?? Self.size)
            highest = counter
            seen[0] |= 1
            return
        }
        let distance = highest - counter
        seen[Int(distance / 64)] |= 1 << (distance % 64)
    }

    /// Moves every bit `count` places older; bits pushed past the window are gone.
    private mutating func shift(by count: UInt64) {
        guard count < Self.size else {
            seen = [UInt64](repeating: 0, count: Self.words)
            return
        }
        let words = Int(count / 64), bits = count % 64
        for index in stride(from: Self.words - 1, through: 0, by: -1) {
            let source = index - words
            var value: UInt64 = source >= 0 ? seen[source] << bits : 0
            if bits > 0, source - 1 >= 0 { value |= seen[source - 1] >> (64 - bits) }
            seen[index] = value
        }
    }
}
