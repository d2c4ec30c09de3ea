import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lists the interfaces mDNS can use now: up, running, multicast-capable, with an address.
///
/// Runs on the calling thread, and so in that thread's network namespace. `getifaddrs` is one
/// quick netlink round trip, which is why the transport calls this on its event loop.
struct MDNSInterfaceScanner {
    /// One usable interface and the NIO devices to join the groups with.
    struct Found {
        var interface: MDNSInterface
        /// A device with an IPv4 address, for joining 224.0.0.251 (NIO joins IPv4 groups by
        /// interface address).
        var ipv4Device: NIONetworkDevice?
        /// A device with an IPv6 address, for joining ff02::fb (NIO joins by index).
        var ipv6Device: NIONetworkDevice?
    }

    /// Keeps interfaces whose name this accepts; nil accepts all.
    var filter: (@Sendable (String) -> Bool)?

    /// The usable interfaces, by index.
    func scan() throws -> [Int: Found] {
        let running = try Self.runningInterfaceNames()
        var found: [Int: Found] = [:]
        for device in try System.enumerateDevices() {
            guard device.multicastSupported, running.contains(device.name), filter?(device.name) ?? true,
                  let address = device.address else { continue }
            let index = device.interfaceIndex
            var entry = found[index] ?? Found(interface: MDNSInterface(index: index, name: device.name))
            switch address {
            case .v4(let v4):
                var raw = v4.address.sin_addr
                entry.interface.ipv4Addresses.append(withUnsafeBytes(of: &raw) { Array($0) })
                if entry.ipv4Device == nil { entry.ipv4Device = device }
            case .v6(let v6):
                var raw = v6.address.sin6_addr
                entry.interface.ipv6Addresses.append(withUnsafeBytes(of: &raw) { Array($0) })
                if entry.ipv6Device == nil { entry.ipv6Device = device }
            case .unixDomainSocket:
                continue
            }
            found[index] = entry
        }
        return found
    }

    /// Names of interfaces that are administratively up and have a carrier: NIO's devices do not
    /// carry these flags, and a down interface keeps its addresses.
    private static func runningInterfaceNames() throws -> Set<String> {
        var list: UnsafeMutablePointer<ifaddrs>? = nil
        guard getifaddrs(&list) == 0 else { throw IOError(errnoCode: errno, reason: "getifaddrs") }
        defer { freeifaddrs(list) }
        var names = Set<String>()
        var cursor = list
        while let entry = cursor {
            let flags = UInt32(entry.pointee.ifa_flags)
            if flags & UInt32(IFF_UP) != 0, flags & UInt32(IFF_RUNNING) != 0, let name = entry.pointee.ifa_name {
                names.insert(String(cString: name))
            }
            cursor = entry.pointee.ifa_next
        }
        return names
    }
}
