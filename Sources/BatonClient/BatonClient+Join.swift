import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import NIOCore
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why joining an account through an agent failed.
public enum JoinError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The agent could not be reached, or the connection failed.
    case unreachable(String)
    /// The agent is not of the account the code names: it may be an impostor.
    case wrongAccount(String)
    /// The agent refused: the code is unknown, used or expired, or the device revoked.
    case refused(String)
    /// The agent's device does not hold the account's key; another device of it may.
    case notSupported(String)
    /// The agent's answer does not make this device a member (a bad certificate).
    case badAnswer(String)

    public var description: String {
        switch self {
        case .unreachable(let why): "cannot reach the agent: \(why)"
        case .wrongAccount(let why): why
        case .refused(let why): "the agent refused: \(why)"
        case .notSupported(let why): "the agent cannot enrol devices: \(why)"
        case .badAnswer(let why): "the agent's answer is not usable: \(why)"
        }
    }
}

/// What an agent answers a join: the account's certificate, the new device certificate, the
/// account's revocation list and its broker, to install with
/// ``DeviceCredentials/join(accountCertificate:deviceCertificate:revocationList:broker:in:now:)``.
public struct JoinGrant: Sendable {
    public let accountCertificate: Certificate
    public let deviceCertificate: Certificate
    public let revocationList: String?
    /// The account's broker; nil when the account has none, or when this Baton cannot use
    /// the one the agent sent (then ``brokerProblem`` says why).
    public let broker: BrokerSettings?
    /// Why the broker the agent sent cannot be used (a scheme this Baton does not know, a CA
    /// that is not PEM); nil when there was none or it can be. It does not spoil the join: the
    /// certificate is good, and the code is spent.
    public let brokerProblem: String?
}

extension BatonClient {
    /// Asks the agent at `address` to enrol this device with `code`. The TLS handshake proves
    /// the agent's account matches the fingerprint the code carries before the code's secret
    /// is sent; the agent's certificate may belong to any device of that account. The key goes
    /// as DER SubjectPublicKeyInfo (``JoinKey/encode(_:)``).
    public func join(
        _ code: InviteCode, at address: DeviceAddress, deviceID: String, deviceName: String, publicKey: Certificate.PublicKey
    ) -> EventLoopFuture<JoinGrant> {
        // The key as the protocol asks for it: DER SubjectPublicKeyInfo.
        let spki: [UInt8]
        do { spki = try JoinKey.encode(publicKey) } catch { return eventLoop.makeFailedFuture(error) }
        let hello = Hello(deviceID: deviceID, deviceName: deviceName)
        let connecting = PeerConnector.connect(
            host: address.host, port: address.port, on: eventLoop, security: options.security,
            expecting: PeerExpectation(deviceID: nil, account: .invitedBy(code)), hello: hello,
            connectTimeout: options.connectTimeout, limits: options.limits, timing: options.timing, logger: logger)
        return connecting.flatMapError { error in
            // The handshake checked the agent's account against the code's fingerprint.
            if case PeerConnectionError.untrustedPeer(let why) = error {
                return self.eventLoop.makeFailedFuture(JoinError.wrongAccount("\(address): \(why)"))
            }
            return self.eventLoop.makeFailedFuture(JoinError.unreachable(Self.describe(error, device: address)))
        }.flatMap { connection in
            guard let account = connection.peerIdentity?.account else {
                connection.goodbye(.unknown, "no account")
                return self.eventLoop.makeFailedFuture(JoinError.wrongAccount("the agent at \(address) presented no account"))
            }
            let request = JoinRequest(inviteSecret: code.secret, deviceID: deviceID, deviceName: deviceName, publicKey: spki)
            return connection.join(request).always { _ in
                connection.goodbye(.unknown, "joined")
            }.flatMapErrorThrowing { error in
                throw JoinError.unreachable(Self.describe(error, device: address))
            }.flatMapThrowing { response in
                try Self.grant(response, account: account)
            }
        }
    }

    private static func grant(_ response: JoinAnswer, account: AccountFingerprint) throws -> JoinGrant {
        switch response.status {
        case .success: break
        case .refused: throw JoinError.refused(response.detail)
        case .notSupported: throw JoinError.notSupported(response.detail)
        case .unknown: throw JoinError.refused(response.detail.isEmpty ? "\(response.status)" : response.detail)
        }
        do {
            let accountCertificate = try Certificate(derEncoded: response.accountCertificate)
            guard try AccountFingerprint(of: accountCertificate) == account else {
                throw JoinError.badAnswer("the account certificate is not the one the agent presented")
            }
            let (broker, brokerProblem) = Self.broker(in: response)
            return JoinGrant(
                accountCertificate: accountCertificate,
                deviceCertificate: try Certificate(derEncoded: response.deviceCertificate),
                revocationList: response.revocationList.isEmpty ? nil : response.revocationList,
                broker: broker, brokerProblem: brokerProblem)
        } catch let error as JoinError {
            throw error
        } catch {
            throw JoinError.badAnswer("\(error)")
        }
    }

    /// The broker `response` carries, or why it cannot be used (neither when it carries none).
    private static func broker(in response: JoinAnswer) -> (BrokerSettings?, problem: String?) {
        guard !response.brokerURL.isEmpty else {
            return (nil, response.brokerCA.isEmpty ? nil : "the agent sent a broker CA without a broker URL")
        }
        do {
            return (try BrokerSettings(url: response.brokerURL, caPEM: response.brokerCA.isEmpty ? nil : response.brokerCA), nil)
        } catch {
            return (nil, error.description)
        }
    }
}
