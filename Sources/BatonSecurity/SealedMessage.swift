/// A message a ``SealedSession`` opened: authentic, unexpired, and not seen before.
public struct SealedMessage: Sendable, Equatable {
    /// What the sender said it is (0x00 to ``SealHandshake/maximumMessageKind``).
    public var kind: UInt8
    /// Its place in the sender's sequence, from 0.
    public var counter: UInt64
    /// What it says.
    public var plaintext: [UInt8]

    /// A message with the given fields.
    public init(kind: UInt8, counter: UInt64, plaintext: [UInt8]) {
        self.kind = kind
        self.counter = counter
        self.plaintext = plaintext
    }
}
