import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A LAN between device namespaces `a` and `b` of a ``BrokerNetwork``, beside their links to the hub:
/// two devices at home that also reach the broker, one of which can leave home (its end of the
/// LAN pulled) and come back, while both keep the broker.
///
/// The LAN is a veth pair `lan0` on 10.79.0.0/24, multicast on (mDNS works across it). `a`'s
/// end sits on a bridge `lanbr` (which holds its address, 10.79.0.1) with a spare veth of its
/// own, as a switch would keep its link up: pulling `b`'s end (10.79.0.2) leaves `a`'s carrier
/// up, so only `b` goes dark.
extension BrokerNetwork {
    /// The name of a device namespace's end of the LAN.
    static let lanInterface = "lan0"

    /// The address `namespace` (`a` or `b`) holds on the LAN of ``joinByLAN()``.
    func lanAddress(of namespace: String) -> String {
        namespace == a ? "10.79.0.1" : "10.79.0.2"
    }

    /// Joins `a` and `b` by a LAN of their own; returns once both ends have a carrier.
    func joinByLAN() throws {
        let (ip, lan, first, second) = (NamespacePair.ip, Self.lanInterface, a, b)
        try NamespacePair.command(ip, "link", "add", lan, "netns", first, "type", "veth", "peer", "name", lan, "netns", second)
        try NamespacePair.command(ip, "-n", first, "link", "add", "lanbr", "type", "bridge", "mcast_snooping", "0")
        try NamespacePair.command(ip, "-n", first, "link", "set", lan, "master", "lanbr")
        try NamespacePair.command(ip, "-n", first, "link", "add", "lanspare0", "type", "veth", "peer", "name", "lanspare1")
        try NamespacePair.command(ip, "-n", first, "link", "set", "lanspare0", "master", "lanbr")
        try NamespacePair.command(ip, "-n", first, "addr", "add", lanAddress(of: first) + "/24", "dev", "lanbr")
        try NamespacePair.command(ip, "-n", second, "addr", "add", lanAddress(of: second) + "/24", "dev", lan)
        for (namespace, interface) in [(first, lan), (first, "lanspare0"), (first, "lanspare1"), (first, "lanbr"), (second, lan)] {
            try NamespacePair.command(ip, "-n", namespace, "link", "set", interface, "multicast", "on", "up")
        }
        try waitForCarrier(first, "lanbr")
        try waitForCarrier(second, lan)
    }

    /// Pulls `namespace`'s end of the LAN (down) or puts it back (up, returning once it has a
    /// carrier again).
    func setLAN(_ namespace: String, up: Bool) throws {
        try NamespacePair.command(NamespacePair.ip, "-n", namespace, "link", "set", Self.lanInterface, up ? "up" : "down")
        if up { try waitForCarrier(namespace, Self.lanInterface) }
    }
}
