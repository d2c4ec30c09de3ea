// Value ⇄ wire: a service request's message (a `Dictionary`, Protocol/baton.proto) as Baton
// reads it from any peer with a channel open: ValueReader's strict read, the checked bytes kept
// as they came and read again trusted, the general path for messages proto3 would merge, and
// the Value rules (kinds, UTF-8, one kind per array, unique keys, depth).
//
// Input: the fields of one Dictionary message, sent as a ServiceRequest's message. Checked:
// - Baton's reading of the frame agrees with SwiftProtobuf's: both refuse it, or both read the
//   same Values, or both find the message breaks the same rule at the same path;
// - Values that pass write (request and response frames) and read back as themselves, the
//   request kept in its checked bytes.
import BatonCore
import BatonWire
import FuzzSupport
import NIOCore
import SwiftProtobuf

let options: BinaryDecodingOptions = {
    var options = BinaryDecodingOptions()
    options.discardUnknownFields = true
    // ProtoReader's limit, so that nesting is refused (or not) alike.
    options.messageDepthLimit = ProtoReader.maxDepth
    return options
}()

/// Values as bytes SwiftProtobuf writes: equal for equal Values, a NaN included.
func bytes(_ values: ValueDictionary) -> [UInt8] {
    try! Baton_V1_Dictionary(values).serializedBytes()
}

func describe(_ result: Result<ValueDictionary, ValueError>) -> String {
    switch result {
    case .success(let values): "values \(bytes(values))"
    case .failure(let error): "error \(error)"
    }
}

/// The frame in `out`, read back.
func readBack(_ out: inout ByteBuffer) -> Frame? {
    var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
    guard case .frame(let frame)? = try? decoder.decode(buffer: &out) else { return nil }
    return frame
}

fuzz { raw in
    let payload = serviceRequestPayload(message: [UInt8](raw))
    let reference: Result<ValueDictionary, ValueError>?
    if let frame = try? Baton_V1_Frame(serializedBytes: payload, options: options) {
        reference = Result { () throws(ValueError) in try ValueDictionary(wire: frame.serviceRequest.message, path: "message") }
    } else {
        reference = nil
    }
    var input = ByteBuffer(bytes: varint(payload.count) + payload)
    var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
    let ours: Result<ValueDictionary, ValueError>?
    let message: ServiceMessage?
    var refusal: (any Error)? = nil
    do {
        switch try decoder.decode(buffer: &input) {
        case .frame(.serviceRequest(1, 1, let received, 0))?:
            message = received
            ours = received.values
        case let other:
            fuzzFailure("a service request read as \(String(describing: other))")
        }
    } catch {
        message = nil
        ours = nil
        refusal = error
    }
    guard let ours, let message else {
        if let reference, let refusal {
            fuzzFailure("Baton refuses a message SwiftProtobuf reads (\(refusal)): \(describe(reference))")
        }
        return
    }
    guard let reference else {
        // By design: a message nested past ProtoReader's limit (where SwiftProtobuf refuses the
        // frame) is answered as too deep, and the connection lives on.
        if case .failure(let error) = ours, error.reason.hasPrefix("nested deeper than") { return }
        fuzzFailure("Baton reads a message SwiftProtobuf refuses: \(describe(ours))")
    }
    guard describe(ours) == describe(reference) else {
        fuzzFailure("Baton reads the message otherwise than SwiftProtobuf:\nBaton:     \(describe(ours))\nreference: \(describe(reference))")
    }
    if message.isChecked, case .failure = ours { fuzzFailure("checked bytes that break the rules") }
    note(describe(ours))
    guard case .success(let values) = ours else { return }

    // Values → wire → Values, as a request (kept checked) and as a response.
    var out = ByteBuffer()
    do {
        try FrameEncoder.encode(.serviceRequest(channelID: 2, requestID: 3, message: ServiceMessage(values), timeout: 9), into: &out, maxFrameSize: FrameLimits.hardLimit)
    } catch {
        fuzzFailure("Values read from the wire cannot be sent: \(error)")
    }
    guard case .serviceRequest(2, 3, let again, 9)? = readBack(&out), again.isChecked,
          case .success(let valuesAgain) = again.values, bytes(valuesAgain) == bytes(values) else {
        fuzzFailure("Values sent as a request do not read back as themselves: \(values)")
    }
    out.clear()
    do {
        try FrameEncoder.encode(.serviceResponse(channelID: 2, requestID: 3, reply: .success(values)), into: &out, maxFrameSize: FrameLimits.hardLimit)
    } catch {
        fuzzFailure("Values read from the wire cannot be answered: \(error)")
    }
    guard case .serviceResponse(2, 3, let reply)? = readBack(&out), reply.status == .success,
          bytes(reply.message ?? [:]) == bytes(values) else {
        fuzzFailure("Values sent as a response do not read back as themselves: \(values)")
    }
}
