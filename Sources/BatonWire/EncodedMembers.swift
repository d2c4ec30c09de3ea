/// A message's members already written in the wire format: made where the message lives (a Lua
/// table, on the runtime's thread) and sent from another thread by copying its bytes, without
/// Values in between.
package struct EncodedMembers: MessageSource, Sendable {
    private let bytes: [UInt8]

    /// The members `source` writes; nil when it gives up (the message is then sent another way).
    package init?(_ source: some MessageSource) {
        var writer = ProtoWriter()
        guard source.writeMembers(to: &writer) else { return nil }
        bytes = writer.withBytes { [UInt8]($0) }
    }

    package func writeMembers(to writer: inout ProtoWriter) -> Bool {
        bytes.withUnsafeBytes { writer.raw($0) }
        return true
    }
}
