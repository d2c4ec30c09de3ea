import BatonCore

/// What an agent puts in its `_baton._tcp` TXT record, and how a browser reads it back
/// (DESIGN.md, "Discovery"): `id`, `kind`, `platform`, `v` (protocol version), `acct` (account
/// fingerprint), `model`, `mfr`. The display name is the instance name, not a TXT key.
public enum DeviceAdvertisement {
    /// The TXT entries advertising `device`. Empty model, manufacturer and account are left out.
    public static func txt(for device: DeviceInfo, account: String = "", protocolVersion: Int = 1) -> [DNSTXTEntry] {
        var pairs: [(String, String)] = [
            ("id", device.id), ("kind", device.kind.rawValue), ("platform", device.platform.rawValue),
            ("v", String(protocolVersion)),
        ]
        if !account.isEmpty { pairs.append(("acct", account)) }
        if !device.model.isEmpty { pairs.append(("model", device.model)) }
        if !device.manufacturer.isEmpty { pairs.append(("mfr", device.manufacturer)) }
        // A value too long for one TXT string (255 bytes with its key) is cut rather than lost.
        return pairs.compactMap { key, value in
            DNSTXTEntry(key: key, value: Array(value.utf8.prefix(254 - key.utf8.count)))
        }
    }

    /// The device `service` advertises, or nil when it is not a Baton agent's advertisement (no
    /// `id`). Unknown kinds and platforms read as `unknown`; a missing `v` as version 1.
    /// Endpoints are the service's addresses with its port, routable IPv4 first and link-local
    /// IPv6 (with its interface) last.
    public static func device(from service: MDNSService) -> RemoteDevice? {
        guard let id = service.txtValue("id"), !id.isEmpty else { return nil }
        let info = DeviceInfo(
            id: id, name: service.instanceName,
            kind: service.txtValue("kind").flatMap(DeviceKind.init(rawValue:)) ?? .unknown,
            platform: service.txtValue("platform").flatMap(Platform.init(rawValue:)) ?? .unknown,
            model: service.txtValue("model") ?? "", manufacturer: service.txtValue("mfr") ?? "")
        let endpoints = service.addresses.sorted { (rank($0), $0.description) < (rank($1), $1.description) }.map {
            RemoteDevice.Endpoint(host: $0.description, port: Int(service.port))
        }
        return RemoteDevice(
            info: info, endpoints: endpoints, transport: .local, status: .available,
            account: service.txtValue("acct") ?? "",
            protocolVersion: service.txtValue("v").flatMap { Int($0) } ?? 1, sources: [.mdns])
    }

    /// Connection preference: routable before link-local, IPv4 before IPv6 (no scope needed).
    private static func rank(_ address: MDNSServiceAddress) -> Int {
        (address.isLinkLocal ? 2 : 0) + (address.family == .ipv6 ? 1 : 0)
    }
}
