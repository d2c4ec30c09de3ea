import BatonCore
import Testing

@Suite("W3C trace context")
struct TraceContextTests {
    @Test("a valid traceparent is continued: same trace, its span the parent, a new span of ours")
    func continues() {
        let context = TraceContext(continuing: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        #expect(context.traceID == "0af7651916cd43dd8448eb211c80319c")
        #expect(context.parentSpanID == "b7ad6b7169203331")
        #expect(context.spanID.count == 16 && context.spanID != "b7ad6b7169203331")
        #expect(context.traceparent == "00-0af7651916cd43dd8448eb211c80319c-\(context.spanID)-01")
    }

    @Test("what is not a traceparent starts a new trace", arguments: [
        nil, "", "garbage", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
    ])
    func refuses(header: String?) {
        let context = TraceContext(continuing: header)
        #expect(context.parentSpanID == nil)
        #expect(context.traceID.count == 32 && context.traceID != "0af7651916cd43dd8448eb211c80319c")
        #expect(TraceContext.parse(context.traceparent) != nil)
    }

    @Test("a later version's traceparent is read as version 00 reads it")
    func laterVersion() {
        #expect(TraceContext.parse("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more")?.spanID == "b7ad6b7169203331")
    }
}
