import BatonWire
import NIOCore
import Testing

@Suite("Varint")
struct VarintTests {
    static let boundaries: [(UInt64, [UInt8])] = [
        (0, [0x00]), (1, [0x01]), (127, [0x7F]), (128, [0x80, 0x01]), (300, [0xAC, 0x02]),
        (16_383, [0xFF, 0x7F]), (16_384, [0x80, 0x80, 0x01]),
        (UInt64(UInt32.max), [0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
        (UInt64.max, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
    ]

    @Test(arguments: boundaries)
    func writesProtobufEncoding(_ value: UInt64, _ encoded: [UInt8]) {
        var out = ByteBuffer()
        Varint.write(value, into: &out)
        #expect(Array(out.readableBytesView) == encoded)
        #expect(Varint.encodedLength(value) == encoded.count)
    }

    @Test(arguments: boundaries)
    func readsBackAndConsumesExactly(_ value: UInt64, _ encoded: [UInt8]) throws {
        var input = buffer(encoded + [0x2A])
        #expect(try Varint.read(from: &input) == value)
        #expect(Array(input.readableBytesView) == [0x2A])
    }

    @Test func incompleteVarintWaitsWithoutConsuming() throws {
        var input = buffer([0x80, 0x80, 0x80])
        #expect(try Varint.read(from: &input) == nil)
        #expect(input.readableBytes == 3)
    }

    @Test func elevenByteVarintIsRefused() {
        var input = buffer(Array(repeating: 0x80, count: 10) + [0x01])
        #expect(wireError { _ = try Varint.read(from: &input) } == "protocol error: varint longer than 10 bytes")
    }

    @Test func tenthByteBeyondBit63IsRefused() {
        var input = buffer(Array(repeating: 0xFF, count: 9) + [0x02])
        #expect(wireError { _ = try Varint.read(from: &input) } == "protocol error: varint does not fit in 64 bits")
    }

    @Test func nonMinimalEncodingIsAccepted() throws {
        var input = buffer([0x81, 0x80, 0x00])
        #expect(try Varint.read(from: &input) == 1)
        #expect(input.readableBytes == 0)
    }
}
