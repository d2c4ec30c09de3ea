import BatonCore

extension Frame {
    /// The frame one serialized `Frame` message holds. Service frames, the hot ones, and launch
    /// requests are read straight into their message (fields in any order, unknown fields
    /// skipped, as proto3 reads); every other frame, and one of those whose fields proto3 would
    /// merge, through the generated types' hand-written codec.
    ///
    /// - Throws: ``WireError/protocolError(_:)`` for bytes that are not a `Frame`, or a frame
    ///   with no body of a kind this side knows.
    package init(payload: UnsafeRawBufferPointer) throws(WireError) {
        let wire: Baton_V1_Frame
        do throws(ProtoReader.Malformed) {
            if let frame = try Self.shortFrame(payload) {
                self = frame
                return
            }
            wire = try Baton_V1_Frame(wireBytes: payload)
        } catch {
            throw .protocolError("malformed frame of \(payload.count) bytes: \(error)")
        }
        self = try Frame(wire: wire)
    }

    /// A frame whose body is the Frame's one field, length-delimited, and of a kind read the
    /// short way: 9 (ServiceRequest), 10 (ServiceResponse), 5 (LaunchRequest). Nil for any
    /// other, to read the general way.
    private static func shortFrame(_ payload: UnsafeRawBufferPointer) throws(ProtoReader.Malformed) -> Frame? {
        var outer = ProtoReader(payload)
        guard let f = try outer.nextField(), f.wireType == 2, f.number == 5 || f.number == 9 || f.number == 10 else { return nil }
        let body = try outer.lengthDelimited()
        guard outer.isAtEnd else { return nil }
        return f.number == 5 ? try launchFrame(body) : try serviceFrame(body, response: f.number == 10)
    }

    /// A LaunchRequest frame read the short way, its data through ``ValueReader`` as a service
    /// message's is: data nested past ``Value/maxDepth``, however deep, is a broken request (it
    /// gets a status), not a malformed frame. Nil for any other frame, or a data field seen twice
    /// (which proto3 merges: read the general way).
    private static func launchFrame(_ body: UnsafeRawBufferPointer) throws(ProtoReader.Malformed) -> Frame? {
        var r = ProtoReader(body, depth: 1)
        var requestID: UInt64 = 0, timeout: UInt32 = 0
        var uri = "", appID = "", fallback = ""
        var preferred: [String] = []
        var data: UnsafeRawBufferPointer? = nil
        // LaunchRequest {1 request_id, 2 uri, 3 app_id, 4 fallback_uri, 5 preferred_app_ids,
        // 6 data, 7 timeout_ms}.
        while let g = try r.nextField() {
            switch (g.number, g.wireType) {
            case (1, 0): requestID = try r.varint()
            case (2, 2): uri = try r.string(g)
            case (3, 2): appID = try r.string(g)
            case (4, 2): fallback = try r.string(g)
            case (5, 2): preferred.append(try r.string(g))
            case (6, 2):
                guard data == nil else { return nil }
                data = try r.lengthDelimited()
            case (7, 0): timeout = try r.uint32(g)
            default: try r.skip(g.wireType)
            }
        }
        let values = try ValueReader.values(ofDictionary: data ?? UnsafeRawBufferPointer(start: nil, count: 0), path: "data")
        let request = values.map { data in
            LaunchRequest(
                uri: uri, appID: appID.isEmpty ? nil : appID, fallbackURI: fallback.isEmpty ? nil : fallback,
                preferredAppIDs: preferred, data: data)
        }
        return .launchRequest(requestID: requestID, request, timeout: timeout)
    }

    /// A ServiceRequest (or with `response`, ServiceResponse) frame read the short way; nil for
    /// one to read the general way.
    private static func serviceFrame(_ body: UnsafeRawBufferPointer, response: Bool) throws(ProtoReader.Malformed) -> Frame? {
        var r = ProtoReader(body, depth: 1)
        var channelID: UInt64 = 0, requestID: UInt64 = 0, status = 0, timeout: UInt32 = 0
        var message: UnsafeRawBufferPointer? = nil
        var detail = ""
        // Field numbers: ServiceRequest {1 channel_id, 2 request_id, 3 message, 4 timeout_ms};
        // ServiceResponse {1 channel_id, 2 request_id, 3 status, 4 message, 5 detail}.
        let messageField = response ? 4 : 3
        while let g = try r.nextField() {
            switch (g.number, g.wireType) {
            case (1, 0): channelID = try r.varint()
            case (2, 0): requestID = try r.varint()
            case (3, 0) where response: status = try r.enumValue(g)
            case (4, 0) where !response: timeout = try r.uint32(g)
            case (messageField, 2):
                // Seen twice, the two merge: the general way reads that.
                guard message == nil else { return nil }
                message = try r.lengthDelimited()
            case (5, 2) where response: detail = try r.string(g)
            default: try r.skip(g.wireType)
            }
        }
        let fields = message ?? UnsafeRawBufferPointer(start: nil, count: 0)
        if !response {
            return .serviceRequest(
                channelID: channelID, requestID: requestID, message: try ServiceMessage(fields: fields, units: 2), timeout: timeout)
        }
        let replyStatus = ResponseStatus(wire: Baton_V1_ResponseStatus(rawValue: status) ?? .unknown)
        let values = replyStatus == .success ? try ValueReader.values(ofDictionary: fields) : .success([:])
        return .serviceResponse(
            channelID: channelID, requestID: requestID, reply: ServiceReply(status: replyStatus, message: values, detail: detail))
    }
}
