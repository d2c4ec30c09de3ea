import BatonCore
import NIOCore

/// `player = { backend = "mpris", bus_name = "org.mpris.MediaPlayer2.NAME", bus = ADDRESS, timeout = s }`:
/// a running MPRIS player (mpv with mpv-mpris, VLC, ...) that owns `bus_name` on the D-Bus bus
/// at `bus` (a D-Bus address such as `unix:path=/run/user/1000/bus`; default: the session bus,
/// from `DBUS_SESSION_BUS_ADDRESS`); a call waits `timeout` seconds at most for its answer
/// (default 2). The agent attaches to the player and never starts or stops it.
struct MPRISBackend: PlayerBackend {
    static let name = "mpris"
    static let fields: Set<String> = ["bus_name", "bus", "timeout"]
    static let namePrefix = "org.mpris.MediaPlayer2."

    var busName: String
    var address: String?
    var timeout: Double

    init(_ fields: PlayerFields) throws {
        guard let busName = try fields.string("bus_name") else {
            throw fields.fail("bus_name is required (\(Self.namePrefix)NAME)")
        }
        guard Self.isBusName(busName) else {
            throw fields.fail("bus_name must be a D-Bus name \(Self.namePrefix)NAME (letters, digits, _ and -, parts joined by dots), got \"\(busName)\"")
        }
        self.busName = busName
        address = try fields.string("bus")
        if let address, !address.contains(":") {
            throw fields.fail("bus must be a D-Bus address such as unix:path=/run/user/1000/bus, got \"\(address)\"")
        }
        timeout = try fields.seconds("timeout", atMost: 600) ?? 2
    }

    /// Whether `name` is a well-known bus name under ``namePrefix`` (D-Bus: at most 255
    /// bytes, elements of `[A-Za-z0-9_-]` not starting with a digit, joined by dots).
    static func isBusName(_ name: String) -> Bool {
        guard name.hasPrefix(namePrefix), name.utf8.count > namePrefix.utf8.count, name.utf8.count <= 255 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { element in
            guard let first = element.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
            return element.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") }
        }
    }

    func makePlayer(_ context: PlayerContext) -> any Player {
        let player = MPRISPlayer(busName: busName, address: address, on: context.eventLoop, logger: context.logger)
        player.callTimeout = .nanoseconds(Int64(timeout * 1e9))
        // A play takes several calls and a proof: at least 10 s, more for a slow player.
        player.playTimeout = max(.seconds(10), .nanoseconds(Int64(4 * timeout * 1e9)))
        player.settleTimeout = max(.seconds(5), .nanoseconds(Int64(2 * timeout * 1e9)))
        return player
    }
}
