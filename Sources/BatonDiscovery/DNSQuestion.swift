import NIOCore

/// An entry of a message's question section (RFC 1035 §4.1.2).
public struct DNSQuestion: Sendable, Hashable, CustomStringConvertible {
    /// The name asked about.
    public var name: DNSName
    /// The type asked for; ``DNSRecordType/any`` for all.
    public var type: DNSRecordType
    /// The class asked for, without the unicast-response bit; ``DNSClass/any`` for all.
    public var recordClass: DNSClass
    /// mDNS's QU bit, the top bit of the class field: the asker would like a unicast reply
    /// (RFC 6762 §5.4). Clear means QM, a multicast reply.
    public var unicastResponse: Bool

    /// A question about `name`; an mDNS QM question unless `unicastResponse` is set.
    public init(
        name: DNSName, type: DNSRecordType, recordClass: DNSClass = .internet, unicastResponse: Bool = false
    ) {
        self.name = name
        self.type = type
        self.recordClass = recordClass
        self.unicastResponse = unicastResponse
    }

    /// Whether `record` answers this question: the same name (ignoring case), and the same type
    /// and class unless the question asks for ANY.
    public func isAnswered(by record: DNSResourceRecord) -> Bool {
        (type == .any || type == record.type)
            && (recordClass == .any || recordClass == record.recordClass)
            && name == record.name
    }

    /// Appends the question, its name through `names`.
    func write(into buffer: inout ByteBuffer, names: inout DNSNameCompressor) {
        names.write(name, into: &buffer)
        buffer.writeInteger(type.rawValue)
        buffer.writeInteger(recordClass.rawValue | (unicastResponse ? 0x8000 : 0))
    }

    /// `name type class`, with ` QU` when a unicast response is asked for.
    public var description: String {
        "\(name) \(type) \(recordClass)" + (unicastResponse ? " QU" : "")
    }
}
