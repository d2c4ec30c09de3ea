@testable import BatonAgent
import NIOCore
import Testing

/// What each `Range` header gets from the media server, for a file of 1000 bytes.
@Suite("Byte ranges of shared media")
struct ByteRangeTests {
    @Test("one range is served as asked, clipped to the file; the last N bytes; past the end is 416; anything else is the whole file")
    func ranges() {
        func parse(_ header: String?) -> Result<ByteRange, ByteRange.Unsatisfiable>? { ByteRange.parse(header, size: 1000) }
        #expect(parse("bytes=100-199") == .success(ByteRange(lower: 100, upper: 200)))
        #expect(parse("bytes=900-") == .success(ByteRange(lower: 900, upper: 1000)))
        #expect(parse("bytes=990-5000") == .success(ByteRange(lower: 990, upper: 1000)))
        #expect(parse("bytes=-10") == .success(ByteRange(lower: 990, upper: 1000)))
        #expect(parse("bytes=-5000") == .success(ByteRange(lower: 0, upper: 1000)))
        #expect(parse("Bytes=0-0") == .success(ByteRange(lower: 0, upper: 1)))
        #expect(parse("bytes=1000-") == .failure(ByteRange.Unsatisfiable()))
        #expect(parse("bytes=5000-6000") == .failure(ByteRange.Unsatisfiable()))
        for whole in [nil, "items=1-2", "bytes=1-2,5-6", "bytes=5-1", "bytes=a-b", "bytes=-0", "bytes=-", "bytes=--1"] {
            #expect(parse(whole) == nil, "\(whole ?? "no header")")
        }
        #expect(ByteRange.parse("bytes=0-", size: 0) == .failure(ByteRange.Unsatisfiable()))
    }

    @Test("a token names one file for one address until it expires; a mapped IPv4 address is that address")
    func offers() {
        let offers = MediaOffers()
        let token = offers.offer("/srv/a.flac", to: "127.0.0.1", until: .now() + .seconds(60))
        #expect(token.count == 32 && token.allSatisfy(\.isHexDigit))
        #expect((try? offers.offer(token, from: "::ffff:127.0.0.1").get())?.path == "/srv/a.flac")
        func path(_ result: Result<MediaOffers.Offer, MediaOffers.Refusal>) -> Result<String, MediaOffers.Refusal> { result.map { $0.path } }
        #expect(path(offers.offer(token, from: "10.0.0.2")) == .failure(.wrongAddress))
        #expect(path(offers.offer((token.first == "0" ? "1" : "0") + token.dropFirst(), from: "127.0.0.1")) == .failure(.unknown))
        let gone = offers.offer("/srv/b.flac", to: "127.0.0.1", until: .now() - .seconds(1))
        #expect(path(offers.offer(gone, from: "127.0.0.1")) == .failure(.unknown))
        #expect(offers.offer("/srv/a.flac", to: "127.0.0.1", until: .now() + .seconds(60)) != token)
    }
}
