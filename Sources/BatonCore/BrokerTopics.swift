/// The topics Baton uses on an MQTT 5 broker, for one account. They carry the account's
/// fingerprint and device ids only, never a name a person gave, so a broker's ACL can keep each
/// device to its own (`%u` is the device id its certificate names) and nothing on the broker
/// says whose home it is:
///
/// - `baton/v1/ACCOUNT/DEVICE/presence`: the device's signed, retained presence (and its will);
/// - `baton/v1/ACCOUNT/DEVICE/in/agent`: what is sent to the device's agent;
/// - `baton/v1/ACCOUNT/DEVICE/in/TOKEN`: what is sent to one client process of the device
///   (`baton launch`, a script), TOKEN 16 random hex digits a process picks.
///
/// Client ids are bound to the device id the same way: `baton-DEVICE` for the agent,
/// `baton-DEVICE-TOKEN` for a client process, so two agents of one device take each other's
/// session over (which the client notices and says) and clients never do.
public struct BrokerTopics: Sendable, Hashable {
    /// The account's fingerprint, 64 lower-case hex digits.
    public let account: String

    public init(account: String) { self.account = account.lowercased() }

    /// `baton/v1/ACCOUNT/`: everything of the account.
    public var root: String { "baton/v1/\(account)/" }
    /// Every device's presence: a watcher subscribes to it.
    public var allPresence: String { root + "+/presence" }
    /// The retained presence of `device`.
    public func presence(_ device: String) -> String { root + device.lowercased() + "/presence" }
    /// The inbox of `device`'s agent.
    public func agentInbox(_ device: String) -> String { root + device.lowercased() + "/in/agent" }
    /// The inbox of one client process of `device`.
    public func clientInbox(_ device: String, token: String) -> String { root + device.lowercased() + "/in/" + token }
    /// The device's id and what follows it, from a topic of this account; nil for any other.
    public func device(in topic: String) -> (device: String, rest: Substring)? {
        guard topic.hasPrefix(root) else { return nil }
        let tail = topic.dropFirst(root.count)
        guard let slash = tail.firstIndex(of: "/") else { return nil }
        return (String(tail[..<slash]), tail[tail.index(after: slash)...])
    }

    /// The MQTT client id of `device`'s agent.
    public static func agentClientID(_ device: String) -> String { "baton-" + device.lowercased() }
    /// The MQTT client id of one client process of `device`.
    public static func clientID(_ device: String, token: String) -> String { "baton-" + device.lowercased() + "-" + token }
}
