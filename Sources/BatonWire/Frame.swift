import BatonCore

/// One frame of Protocol/baton.proto in BatonCore's terms: what a session reads and writes.
/// ``FrameDecoder`` makes them from bytes and ``FrameEncoder`` writes them; the generated
/// `Baton_V1_*` types stay inside BatonWire. Every request carries `timeout`, how long its
/// sender waits for the answer, in milliseconds (0: the receiver's own limit).
///
/// The handshake's frames and the rarer requests are boxed (`indirect`), so that a frame (a
/// ServiceRequest's or a ServiceResponse's, many a second) is moved and copied in 57 bytes
/// rather than the 105 of the largest.
public enum Frame: Sendable, Equatable {
    indirect case hello(Hello)
    indirect case helloAck(HelloAck)
    case describeRequest(requestID: UInt64, timeout: UInt32)
    /// What the device says of itself: nil when the agent would not (shutting down), or an
    /// error when an app's attributes break the Value rules.
    indirect case describeResponse(requestID: UInt64, Result<DeviceDescription?, ValueError>)
    /// A launch; its data may break the Value rules (the receiver answers with a status).
    indirect case launchRequest(requestID: UInt64, Result<LaunchRequest, ValueError>, timeout: UInt32)
    case launchResponse(requestID: UInt64, status: LaunchStatus, detail: String)
    indirect case openServiceRequest(requestID: UInt64, channelID: UInt64, service: String, app: String, timeout: UInt32)
    case openServiceResponse(requestID: UInt64, status: OpenStatus, detail: String)
    case serviceRequest(channelID: UInt64, requestID: UInt64, message: ServiceMessage, timeout: UInt32)
    /// A reply whose message broke the Value rules arrives as `failure`, saying so.
    case serviceResponse(channelID: UInt64, requestID: UInt64, reply: ServiceReply)
    case closeService(channelID: UInt64, status: ClosedStatus)
    case ping(nonce: UInt64)
    case pong(nonce: UInt64)
    case goodbye(GoodbyeReason, detail: String)
    indirect case joinRequest(requestID: UInt64, JoinRequest, timeout: UInt32)
    indirect case joinResponse(requestID: UInt64, JoinAnswer)

    /// The id of the request this frame is or answers; nil for frames that are neither.
    public var requestID: UInt64? {
        switch self {
        case .describeRequest(let id, _), .describeResponse(let id, _), .launchRequest(let id, _, _),
             .launchResponse(let id, _, _), .openServiceRequest(let id, _, _, _, _), .openServiceResponse(let id, _, _),
             .serviceRequest(_, let id, _, _), .serviceResponse(_, let id, _), .joinRequest(let id, _, _), .joinResponse(let id, _):
            id
        case .hello, .helloAck, .closeService, .ping, .pong, .goodbye:
            nil
        }
    }

    /// Whether the frame is a request, which the other side must answer.
    public var isRequest: Bool { timeout != nil }

    /// How long a request's sender waits for its answer, in milliseconds (0: the receiver's own
    /// limit); nil for frames that are not requests.
    public var timeout: UInt32? {
        switch self {
        case .describeRequest(_, let timeout), .launchRequest(_, _, let timeout), .openServiceRequest(_, _, _, _, let timeout),
             .serviceRequest(_, _, _, let timeout), .joinRequest(_, _, let timeout):
            timeout
        default:
            nil
        }
    }
}

/// The first frame a client sends.
public struct Hello: Sendable, Equatable {
    /// The protocol version the client speaks.
    public var protocolVersion: UInt32
    /// The client's device id and display name; empty for a bare tool.
    public var deviceID: String
    public var deviceName: String
    /// The largest frame the client accepts; 0 means the default.
    public var maxFrameSize: UInt32
    /// The client's account's signed revocation list; empty if none.
    public var revocationList: String
    /// The caller's W3C `traceparent`; empty if none.
    public var traceparent: String

    public init(
        protocolVersion: UInt32 = 1, deviceID: String = "", deviceName: String = "", maxFrameSize: UInt32 = 0,
        revocationList: String = "", traceparent: String = ""
    ) {
        self.protocolVersion = protocolVersion
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.maxFrameSize = maxFrameSize
        self.revocationList = revocationList
        self.traceparent = traceparent
    }
}

/// The agent's answer to Hello.
public struct HelloAck: Sendable, Equatable {
    public var protocolVersion: UInt32
    /// The agent's device; nil when the frame carries none.
    public var device: DeviceInfo?
    /// The largest frame the agent accepts; 0 means the default.
    public var maxFrameSize: UInt32
    /// The agent's signed revocation list (to callers of its account); empty if none.
    public var revocationList: String

    public init(protocolVersion: UInt32 = 1, device: DeviceInfo? = nil, maxFrameSize: UInt32 = 0, revocationList: String = "") {
        self.protocolVersion = protocolVersion
        self.device = device
        self.maxFrameSize = maxFrameSize
        self.revocationList = revocationList
    }
}

/// Why a side closes the connection on purpose (Goodbye's reason).
public enum GoodbyeReason: Sendable, Equatable, CaseIterable {
    case unknown
    /// The agent is shutting down: open channels are canceled.
    case shutdown
    /// The peer broke the protocol.
    case protocolError
    /// A frame was over the size limit.
    case frameTooLarge
    /// The peer said nothing in time.
    case timeout
    /// The protocol versions do not match.
    case unsupportedVersion
    /// The agent takes no more connections for now (from this address, from strangers, or in
    /// all).
    case busy
}
