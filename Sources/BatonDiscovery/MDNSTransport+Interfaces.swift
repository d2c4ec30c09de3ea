import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

// The interfaces a transport uses: joining and leaving the multicast groups as they come and go.
extension MDNSTransport {
    /// Lists the interfaces again: joins the groups on new ones, leaves them on those gone,
    /// and tells the listeners what changed.
    func rescan() {
        guard !closed else { return }
        let scanned: [Int: MDNSInterfaceScanner.Found]
        do {
            scanned = try scanner.scan()
        } catch {
            logger.warning("mDNS: cannot list network interfaces", metadata: ["error": "\(error)"])
            return
        }
        var events: [MDNSTransportEvent] = []
        for (index, old) in found where scanned[index] == nil {
            for family in MDNSAddressFamily.allCases where joined[family, default: []].contains(index) {
                leave(family, old)
            }
            found[index] = nil
            events.append(.interfaceRemoved(old.interface))
        }
        for (index, new) in scanned.sorted(by: { $0.key < $1.key }) {
            let old = found[index]
            for family in MDNSAddressFamily.allCases {
                let wanted = device(of: family, in: new) != nil && channels[family] != nil
                let member = joined[family, default: []].contains(index)
                if wanted, !member {
                    join(family, new)
                } else if !wanted, member, let old {
                    leave(family, old)
                }
            }
            let inUse = MDNSAddressFamily.allCases.contains { joined[$0, default: []].contains(index) }
            switch (old, inUse) {
            case (nil, true):
                found[index] = new
                events.append(.interfaceAdded(new.interface))
            case (let old?, true):
                found[index] = new
                if old.interface != new.interface { events.append(.interfaceChanged(new.interface)) }
            case (let old?, false):
                found[index] = nil
                events.append(.interfaceRemoved(old.interface))
            case (nil, false):
                break
            }
        }
        interfaces = found.values.map(\.interface).sorted { $0.index < $1.index }
        for event in events {
            logger.debug("mDNS: interface change", metadata: ["event": "\(event)"])
            emit(event)
        }
    }

    private func device(of family: MDNSAddressFamily, in found: MDNSInterfaceScanner.Found) -> NIONetworkDevice? {
        family == .ipv4 ? found.ipv4Device : found.ipv6Device
    }

    private func join(_ family: MDNSAddressFamily, _ found: MDNSInterfaceScanner.Found) {
        guard let channel = channels[family] as? any MulticastChannel, let group = groups[family],
              let device = device(of: family, in: found) else { return }
        let index = found.interface.index
        // Completes at once: we are on the channel's loop.
        channel.joinGroup(group, device: device).whenComplete { [self] result in
            switch result {
            case .success:
                joined[family, default: []].insert(index)
            case .failure(let error as IOError) where error.errnoCode == EADDRINUSE:
                joined[family, default: []].insert(index)  // already a member
            case .failure(let error):
                logger.debug(
                    "mDNS: cannot join the group",
                    metadata: ["interface": "\(found.interface.name)", "family": "\(family)", "error": "\(error)"])
            }
        }
    }

    private func leave(_ family: MDNSAddressFamily, _ found: MDNSInterfaceScanner.Found) {
        let index = found.interface.index
        joined[family, default: []].remove(index)
        guard let channel = channels[family] as? any MulticastChannel, let group = groups[family],
              let device = device(of: family, in: found) else { return }
        // An interface that is gone has left already; the error says so and is of no interest.
        channel.leaveGroup(group, device: device).whenFailure { _ in }
    }
}
