import NIOCore

extension TimeAmount {
    /// A uniformly random amount in `range`, to the nanosecond.
    static func random(in range: ClosedRange<TimeAmount>) -> TimeAmount {
        .nanoseconds(Int64.random(in: range.lowerBound.nanoseconds...range.upperBound.nanoseconds))
    }
}
