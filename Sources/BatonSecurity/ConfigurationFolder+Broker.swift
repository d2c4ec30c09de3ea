import BatonCore
#if canImport(Glibc)
import Glibc
#endif

extension ConfigurationFolder {
    /// The file that holds the account's broker: `broker.json`.
    public static let brokerFile = "broker.json"

    /// The broker stored for the account (`baton account broker URL`), or nil when none is.
    /// A file that does not read as one is an error naming it, never silently no broker.
    public func broker() throws -> BrokerSettings? {
        guard let text = try read(Self.brokerFile) else { return nil }
        guard let json = try? JSON.parse(text), let url = json["url"]?.stringValue else {
            throw SecurityError.damaged("\(file(Self.brokerFile)) is not a broker's settings; set it again with baton account broker URL, or remove it")
        }
        do {
            return try BrokerSettings(url: url, caPEM: json["ca"]?.stringValue)
        } catch {
            throw SecurityError.damaged("\(file(Self.brokerFile)): \(error)")
        }
    }

    /// Stores `broker` as the account's (0600, whole or not at all); nil removes it.
    public func setBroker(_ broker: BrokerSettings?) throws {
        guard let broker else {
            guard unlink(file(Self.brokerFile)) == 0 || errno == ENOENT else {
                throw SecurityError.storage("cannot remove \(file(Self.brokerFile)): \(String(cString: strerror(errno)))")
            }
            return
        }
        try create()
        try write(broker.json.serialized(pretty: true) + "\n", to: Self.brokerFile)
    }
}

extension BrokerSettings {
    /// `{"url": URL, "ca": PEM}` (`ca` only when the broker has a CA of its own): as the
    /// configuration folder and a device file hold it.
    public var json: JSON {
        var members: [JSON.Member] = [.init("url", .string(url))]
        if let caPEM { members.append(.init("ca", .string(caPEM))) }
        return .object(members)
    }

    /// The settings `json` holds (see ``json``); throws ``Invalid`` for anything else.
    public init(json: JSON) throws(Invalid) {
        guard let url = json["url"]?.stringValue else { throw Invalid("the broker's settings have no url") }
        try self.init(url: url, caPEM: json["ca"]?.stringValue)
    }
}
