import BatonCore
import BatonWire

/// What a request's refusal needs of it: its kind and ids.
package struct RequestHead: Sendable, Equatable {
    package enum Kind: Sendable, Equatable { case describe, launch, open, service, join }

    package var kind: Kind
    package var requestID: UInt64
    /// The channel of a ServiceRequest, or the one an OpenServiceRequest would open.
    package var channelID: UInt64

    package init(kind: Kind, requestID: UInt64, channelID: UInt64 = 0) {
        self.kind = kind
        self.requestID = requestID
        self.channelID = channelID
    }

    /// The head of a request frame, or of the request a response answers; nil for other frames.
    package init?(_ frame: Frame) {
        switch frame {
        case .describeRequest(let id, _), .describeResponse(let id, _): self.init(kind: .describe, requestID: id)
        case .launchRequest(let id, _, _), .launchResponse(let id, _, _): self.init(kind: .launch, requestID: id)
        case .openServiceRequest(let id, let channel, _, _, _): self.init(kind: .open, requestID: id, channelID: channel)
        case .openServiceResponse(let id, _, _): self.init(kind: .open, requestID: id)
        case .serviceRequest(let channel, let id, _, _), .serviceResponse(let channel, let id, _):
            self.init(kind: .service, requestID: id, channelID: channel)
        case .joinRequest(let id, _, _), .joinResponse(let id, _): self.init(kind: .join, requestID: id)
        case .hello, .helloAck, .closeService, .ping, .pong, .goodbye: return nil
        }
    }

    /// The request the first bytes of an oversized frame show; nil when they show none.
    package init?(_ oversized: OversizedFrame) {
        guard let id = oversized.requestID else { return nil }
        switch oversized.kind {
        case .describeRequest: self.init(kind: .describe, requestID: id)
        case .launchRequest: self.init(kind: .launch, requestID: id)
        case .openServiceRequest: self.init(kind: .open, requestID: id, channelID: oversized.channelID ?? 0)
        case .serviceRequest: self.init(kind: .service, requestID: id, channelID: oversized.channelID ?? 0)
        case .other: return nil
        }
    }
}

/// Why a request is not served as asked.
package enum Refusal: Sendable, Equatable {
    /// The agent is shutting down.
    case shuttingDown
    /// The request was over this end's frame limit (`detail` says by how much).
    case tooLarge(String)
    /// The answer would be over the peer's frame limit.
    case answerTooLarge(String)
    /// Whatever was to answer it failed.
    case failed(String)
    /// A request on a channel that is not open.
    case channelNotOpen
    /// An OpenServiceRequest for a channel id that is open already.
    case channelAlreadyOpen
    /// Its deadline passed before its answer was ready (`detail` says when).
    case timedOut(String)
    /// The connection has as much open as it may (`detail` says what).
    case limitReached(String)
}

extension SessionStateMachine {
    /// The answer a request gets when it cannot be served as asked: every kind of request has
    /// one status for each reason, and this is the one place that says which.
    package static func refusal(_ head: RequestHead, _ why: Refusal) -> Frame? {
        let id = head.requestID
        switch head.kind {
        case .describe:
            // A device that cannot describe itself says nothing of itself.
            return .describeResponse(requestID: id, .success(nil))
        case .launch:
            let status: LaunchStatus = switch why {
            case .shuttingDown: .remoteSystemUnavailable
            case .tooLarge: .valueSetTooLarge
            case .answerTooLarge, .failed, .channelNotOpen, .channelAlreadyOpen, .timedOut, .limitReached: .unknown
            }
            return .launchResponse(requestID: id, status: status, detail: detail(why, head))
        case .open:
            let status: OpenStatus = why == .shuttingDown ? .remoteSystemUnavailable : .unknown
            return .openServiceResponse(requestID: id, status: status, detail: detail(why, head))
        case .service:
            let status: ResponseStatus = switch why {
            case .shuttingDown: .remoteSystemUnavailable
            case .tooLarge, .answerTooLarge: .messageSizeTooLarge
            case .failed, .channelAlreadyOpen: .failure
            case .channelNotOpen: .appServiceConnectionClosed
            case .timedOut: .unknown
            case .limitReached: .resourceLimitsExceeded
            }
            return .serviceResponse(channelID: head.channelID, requestID: id, reply: ServiceReply(status: status, detail: detail(why, head)))
        case .join:
            return .joinResponse(requestID: id, JoinAnswer(status: .unknown, detail: detail(why, head)))
        }
    }

    /// What to send instead of `answer` when it is over the peer's limit of `limit` bytes: a
    /// describe without its apps, any other answer the too-large status of its kind.
    package static func fallback(for answer: Frame, size: Int, limit: Int) -> Frame? {
        if case .describeResponse(let id, .success(let description?)) = answer, !description.apps.isEmpty {
            return .describeResponse(requestID: id, .success(DeviceDescription(device: description.device)))
        }
        guard let head = RequestHead(answer) else { return nil }
        return refusal(head, .answerTooLarge("the answer is \(size) bytes, over this client's limit of \(limit)"))
    }

    private static func detail(_ why: Refusal, _ head: RequestHead) -> String {
        switch why {
        case .shuttingDown: "the agent is shutting down"
        case .tooLarge(let detail), .answerTooLarge(let detail), .failed(let detail), .timedOut(let detail), .limitReached(let detail):
            detail
        case .channelNotOpen: "channel \(head.channelID) is not open"
        case .channelAlreadyOpen: "channel \(head.channelID) is already open"
        }
    }
}
