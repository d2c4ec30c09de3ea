#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonCore

// Frames ⇄ the generated types: the general path, for frames the fast path of service
// frames does not read, and for every frame written but those.

extension Frame {
    /// The frame `wire` carries, its dictionaries read by ``ValueReader``.
    ///
    /// - Throws: ``WireError/protocolError(_:)`` for a frame with no body (or one of a kind
    ///   this side does not know).
    package init(wire: Baton_V1_Frame) throws(WireError) {
        guard let body = wire.body else { throw .protocolError("frame of unknown type") }
        switch body {
        case .hello(let m):
            self = .hello(Hello(
                protocolVersion: m.protocolVersion, deviceID: m.deviceID, deviceName: m.deviceName,
                maxFrameSize: m.maxFrameSize, revocationList: m.revocationList, traceparent: m.traceparent))
        case .helloAck(let m):
            self = .helloAck(HelloAck(
                protocolVersion: m.protocolVersion, device: m.hasDevice ? DeviceInfo(wire: m.device) : nil,
                maxFrameSize: m.maxFrameSize, revocationList: m.revocationList))
        case .describeRequest(let m):
            self = .describeRequest(requestID: m.requestID, timeout: m.timeoutMs)
        case .describeResponse(let m):
            let description = Result { () throws(ValueError) -> DeviceDescription? in
                guard m.hasDevice else { return nil }
                return DeviceDescription(device: DeviceInfo(wire: m.device), apps: try m.apps.map { app throws(ValueError) in try AppInfo(wire: app) })
            }
            self = .describeResponse(requestID: m.requestID, description)
        case .launchRequest(let m):
            let request = m.data.values(path: "data").map { data in
                LaunchRequest(
                    uri: m.uri, appID: m.appID.isEmpty ? nil : m.appID, fallbackURI: m.fallbackUri.isEmpty ? nil : m.fallbackUri,
                    preferredAppIDs: m.preferredAppIds, data: data)
            }
            self = .launchRequest(requestID: m.requestID, request, timeout: m.timeoutMs)
        case .launchResponse(let m):
            self = .launchResponse(requestID: m.requestID, status: LaunchStatus(wire: m.status), detail: m.detail)
        case .openServiceRequest(let m):
            self = .openServiceRequest(requestID: m.requestID, channelID: m.channelID, service: m.serviceName, app: m.appID, timeout: m.timeoutMs)
        case .openServiceResponse(let m):
            self = .openServiceResponse(requestID: m.requestID, status: OpenStatus(wire: m.status), detail: m.detail)
        case .serviceRequest(let m):
            self = .serviceRequest(
                channelID: m.channelID, requestID: m.requestID, message: ServiceMessage(m.message.values(path: "message")), timeout: m.timeoutMs)
        case .serviceResponse(let m):
            self = .serviceResponse(
                channelID: m.channelID, requestID: m.requestID,
                reply: ServiceReply(status: ResponseStatus(wire: m.status), message: m.message.values(path: "message"), detail: m.detail))
        case .closeService(let m):
            self = .closeService(channelID: m.channelID, status: ClosedStatus(wire: m.status))
        case .ping(let m):
            self = .ping(nonce: m.nonce)
        case .pong(let m):
            self = .pong(nonce: m.nonce)
        case .goodbye(let m):
            self = .goodbye(GoodbyeReason(wire: m.reason), detail: m.detail)
        case .joinRequest(let m):
            self = .joinRequest(requestID: m.requestID, JoinRequest(
                inviteSecret: Array(m.inviteSecret), deviceID: m.deviceID, deviceName: m.deviceName, publicKey: Array(m.publicKey)),
                timeout: m.timeoutMs)
        case .joinResponse(let m):
            self = .joinResponse(requestID: m.requestID, JoinAnswer(
                status: JoinStatus(wire: m.status), detail: m.detail, accountCertificate: Array(m.accountCertificate),
                deviceCertificate: Array(m.deviceCertificate), revocationList: m.revocationList, brokerURL: m.brokerURL,
                brokerCA: m.brokerCa))
        }
    }

    /// The frame as the generated types hold it. A message that breaks the Value rules has no
    /// wire form: it goes as the empty dictionary (``FrameEncoder`` refuses such frames first).
    package var wire: Baton_V1_Frame {
        var frame = Baton_V1_Frame()
        switch self {
        case .hello(let hello):
            frame.hello = .with {
                $0.protocolVersion = hello.protocolVersion
                $0.deviceID = hello.deviceID
                $0.deviceName = hello.deviceName
                $0.maxFrameSize = hello.maxFrameSize
                $0.revocationList = hello.revocationList
                $0.traceparent = hello.traceparent
            }
        case .helloAck(let ack):
            frame.helloAck = .with {
                $0.protocolVersion = ack.protocolVersion
                if let device = ack.device { $0.device = Baton_V1_Device(device) }
                $0.maxFrameSize = ack.maxFrameSize
                $0.revocationList = ack.revocationList
            }
        case .describeRequest(let id, let timeout):
            frame.describeRequest = .with {
                $0.requestID = id
                $0.timeoutMs = timeout
            }
        case .describeResponse(let id, let description):
            frame.describeResponse = .with {
                $0.requestID = id
                if case .success(let description?) = description {
                    $0.device = Baton_V1_Device(description.device)
                    $0.apps = description.apps.map(Baton_V1_App.init)
                }
            }
        case .launchRequest(let id, let request, let timeout):
            frame.launchRequest = .with {
                $0.requestID = id
                $0.timeoutMs = timeout
                if case .success(let request) = request {
                    $0.uri = request.uri
                    $0.appID = request.appID ?? ""
                    $0.fallbackUri = request.fallbackURI ?? ""
                    $0.preferredAppIds = request.preferredAppIDs
                    if !request.data.isEmpty { $0.data = Baton_V1_Dictionary(request.data) }
                }
            }
        case .launchResponse(let id, let status, let detail):
            frame.launchResponse = .with {
                $0.requestID = id
                $0.status = Baton_V1_LaunchStatus(status)
                $0.detail = detail
            }
        case .openServiceRequest(let id, let channel, let service, let app, let timeout):
            frame.openServiceRequest = .with {
                $0.requestID = id
                $0.channelID = channel
                $0.serviceName = service
                $0.appID = app
                $0.timeoutMs = timeout
            }
        case .openServiceResponse(let id, let status, let detail):
            frame.openServiceResponse = .with {
                $0.requestID = id
                $0.status = Baton_V1_OpenStatus(status)
                $0.detail = detail
            }
        case .serviceRequest(let channel, let id, let message, let timeout):
            frame.serviceRequest = .with {
                $0.channelID = channel
                $0.requestID = id
                $0.message = Baton_V1_Dictionary((try? message.values.get()) ?? [:])
                $0.timeoutMs = timeout
            }
        case .serviceResponse(let channel, let id, let reply):
            frame.serviceResponse = .with {
                $0.channelID = channel
                $0.requestID = id
                $0.status = Baton_V1_ResponseStatus(reply.status)
                if let message = reply.message { $0.message = Baton_V1_Dictionary(message) }
                $0.detail = reply.detail
            }
        case .closeService(let channel, let status):
            frame.closeService = .with {
                $0.channelID = channel
                $0.status = Baton_V1_ClosedStatus(status)
            }
        case .ping(let nonce):
            frame.ping = .with { $0.nonce = nonce }
        case .pong(let nonce):
            frame.pong = .with { $0.nonce = nonce }
        case .goodbye(let reason, let detail):
            frame.goodbye = .with {
                $0.reason = Baton_V1_Goodbye.Reason(reason)
                $0.detail = detail
            }
        case .joinRequest(let id, let request, let timeout):
            frame.joinRequest = .with {
                $0.requestID = id
                $0.timeoutMs = timeout
                $0.inviteSecret = Data(request.inviteSecret)
                $0.deviceID = request.deviceID
                $0.deviceName = request.deviceName
                $0.publicKey = Data(request.publicKey)
            }
        case .joinResponse(let id, let answer):
            frame.joinResponse = .with {
                $0.requestID = id
                $0.status = Baton_V1_JoinStatus(answer.status)
                $0.detail = answer.detail
                $0.accountCertificate = Data(answer.accountCertificate)
                $0.deviceCertificate = Data(answer.deviceCertificate)
                $0.revocationList = answer.revocationList
                $0.brokerURL = answer.brokerURL
                $0.brokerCa = answer.brokerCA
            }
        }
        return frame
    }
}

extension ServiceReply {
    /// A reply whose message (read from the wire) may break the Value rules: such a reply is
    /// `failure`, saying so. A `success` without a message has the empty one.
    init(status: ResponseStatus, message: Result<ValueDictionary, ValueError>, detail: String) {
        guard status == .success else {
            self.init(status: status, detail: detail)
            return
        }
        switch message {
        case .success(let message): self.init(status: .success, message: message, detail: detail)
        case .failure(let error): self.init(status: .failure, detail: "the reply is not a valid message: \(error)")
        }
    }
}

extension Baton_V1_Dictionary {
    /// The dictionary as Values, or why it breaks the Value rules (below `path`).
    func values(path: String) -> Result<ValueDictionary, ValueError> {
        var writer = ProtoWriter()
        encode(to: &writer)
        do throws(ProtoReader.Malformed) {
            return try writer.withBytes { bytes throws(ProtoReader.Malformed) in
                try ValueReader.values(ofDictionary: bytes, path: path)
            }
        } catch {
            // What the generated types parsed always reads again.
            return .failure(ValueError(path: path, reason: "\(error)"))
        }
    }
}

extension GoodbyeReason {
    init(wire: Baton_V1_Goodbye.Reason) {
        switch wire {
        case .shutdown: self = .shutdown
        case .protocolError: self = .protocolError
        case .frameTooLarge: self = .frameTooLarge
        case .timeout: self = .timeout
        case .unsupportedVersion: self = .unsupportedVersion
        case .busy: self = .busy
        case .unknown, .UNRECOGNIZED: self = .unknown
        }
    }
}

extension Baton_V1_Goodbye.Reason {
    init(_ reason: GoodbyeReason) {
        switch reason {
        case .unknown: self = .unknown
        case .shutdown: self = .shutdown
        case .protocolError: self = .protocolError
        case .frameTooLarge: self = .frameTooLarge
        case .timeout: self = .timeout
        case .unsupportedVersion: self = .unsupportedVersion
        case .busy: self = .busy
        }
    }
}

extension JoinStatus {
    init(wire: Baton_V1_JoinStatus) {
        switch wire {
        case .success: self = .success
        case .refused: self = .refused
        case .notSupported: self = .notSupported
        case .unknown, .UNRECOGNIZED: self = .unknown
        }
    }
}

extension Baton_V1_JoinStatus {
    init(_ status: JoinStatus) {
        switch status {
        case .success: self = .success
        case .refused: self = .refused
        case .notSupported: self = .notSupported
        case .unknown: self = .unknown
        }
    }
}
