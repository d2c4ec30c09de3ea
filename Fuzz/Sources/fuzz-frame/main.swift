// Frames (Protocol/baton.proto): what any peer that opens a TCP connection sends once TLS is
// up, and what an agent's answers hold. Three readers meet here: the frame decoder (lengths,
// oversized frames), Baton's reading of a frame (service frames straight into their message,
// the rest through the hand-written codec of the generated types), and SwiftProtobuf's, the
// reference.
//
// Input: one serialized Frame (no length prefix). Checked:
// - the hand codec reads exactly the frames SwiftProtobuf reads (unknown fields dropped), to
//   the same message, and writes SwiftProtobuf's bytes for each;
// - wherever SwiftProtobuf's frame converts to a Frame, Baton's reading gives the same Frame;
// - a Frame Baton reads writes and reads back as itself;
// - the same bytes as a stream of framed frames under a small limit (the input's first byte),
//   fed whole or in pieces, give the same events and never trap.
@testable import BatonWire
import BatonCore
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

/// A frame as comparable text: its bytes when it can be written (so a NaN equals itself), in
/// SwiftProtobuf's form (a message kept in its checked bytes is written as it came, and a varint
/// may have come longer than it needs); its description when it cannot be written (a message
/// that breaks the Value rules).
func comparable(_ frame: Frame) -> String {
    var out = ByteBuffer()
    guard (try? FrameEncoder.encode(frame, into: &out, maxFrameSize: FrameLimits.hardLimit)) != nil else { return "\(frame)" }
    _ = try! Varint.read(from: &out)
    let bytes = Array(out.readableBytesView)
    guard let canonical: [UInt8] = try? Baton_V1_Frame(serializedBytes: bytes, options: options).serializedBytes() else {
        fuzzFailure("SwiftProtobuf cannot read a frame Baton wrote: \(frame)")
    }
    return "\(canonical)"
}

/// The events a decoder with `limit` finds in `stream` fed in `pieces`, and how it ended.
func events(_ stream: [UInt8], limit: Int, piece: Int) -> [String] {
    var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: limit))
    var buffer = ByteBuffer()
    var out: [String] = []
    var offset = 0
    while true {
        let end = min(stream.count, offset + piece)
        buffer.writeBytes(stream[offset..<end])
        offset = end
        do {
            while let event = try decoder.decodeLast(buffer: &buffer, seenEOF: offset == stream.count) {
                switch event {
                case .frame(let frame): out.append(comparable(frame))
                case .oversized(let view): out.append("oversized \(view)")
                }
            }
        } catch {
            out.append("error \(error)")
            return out
        }
        if offset == stream.count { return out }
    }
}

fuzz { raw in
    let input = [UInt8](raw)
    let reference = try? Baton_V1_Frame(serializedBytes: input, options: options)
    let hand: Baton_V1_Frame?
    var handError: (any Error)? = nil
    do {
        hand = try input.withUnsafeBytes { bytes throws(ProtoReader.Malformed) in try Baton_V1_Frame(wireBytes: bytes) }
    } catch {
        hand = nil
        handError = error
    }

    // The hand codec against SwiftProtobuf: the same frames, read the same, written the same.
    switch (reference, hand) {
    case (nil, nil): break
    case (let reference?, nil):
        fuzzFailure("SwiftProtobuf reads a frame the hand codec refuses (\(handError.map { "\($0)" } ?? "")): \(reference)")
    case (nil, let hand?): fuzzFailure("the hand codec reads a frame SwiftProtobuf refuses: \(hand)")
    case (let reference?, let hand?):
        let referenceBytes: [UInt8] = try! reference.serializedBytes()
        let handBytes: [UInt8] = try! hand.serializedBytes()
        guard referenceBytes == handBytes else { fuzzFailure("the hand codec reads another frame:\n\(reference)\n\(hand)") }
        var out = ByteBuffer()
        if (try? FrameEncoder.encode(reference, into: &out, maxFrameSize: FrameLimits.hardLimit)) != nil {
            _ = try! Varint.read(from: &out)
            guard Array(out.readableBytesView) == referenceBytes else {
                fuzzFailure("the hand codec writes other bytes than SwiftProtobuf for \(reference)")
            }
        } else if reference.body != nil {
            fuzzFailure("the hand codec cannot write \(reference)")
        }
    }

    // Baton's reading of a frame (service frames the short way) against SwiftProtobuf's.
    let ours: Frame?
    var oursError: (any Error)? = nil
    do {
        ours = try input.withUnsafeBytes { bytes throws(WireError) in try Frame(payload: bytes) }
    } catch {
        ours = nil
        oursError = error
    }
    if let expected = reference.flatMap({ try? Frame(wire: $0) }) {
        guard let ours else {
            fuzzFailure("Baton refuses a frame SwiftProtobuf reads (\(oursError.map { "\($0)" } ?? "")): \(expected)")
        }
        guard comparable(ours) == comparable(expected) else { fuzzFailure("Baton reads another frame:\n\(expected)\n\(ours)") }
    }
    if let ours {
        note("\(ours)")
        var out = ByteBuffer()
        if (try? FrameEncoder.encode(ours, into: &out, maxFrameSize: FrameLimits.hardLimit)) != nil {
            var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
            guard case .frame(let again)? = try? decoder.decode(buffer: &out), comparable(again) == comparable(ours) else {
                fuzzFailure("a frame Baton read does not read back as itself: \(ours)")
            }
        }
        _ = "\(ours)"
    }

    // The bytes as a stream: framing, oversized frames, pieces.
    guard let first = input.first else { return }
    let stream = Array(input.dropFirst())
    let limit = 1 + Int(first) * 4
    let whole = events(stream, limit: limit, piece: max(stream.count, 1))
    let pieces = events(stream, limit: limit, piece: 1 + Int(first) % 7)
    guard whole == pieces else { fuzzFailure("fed in pieces, the stream gives other events:\n\(whole)\n\(pieces)") }
}
