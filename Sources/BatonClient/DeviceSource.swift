import BatonCore
import NIOCore

/// Where a ``DeviceDirectory`` learns of devices: mDNS (``MDNSDeviceSource``), static peers
/// (``PeerDeviceSource``), later a broker's presence. A source finds devices, says when it sees
/// one (again, or changed), when it no longer does, when its first look is over, and what went
/// wrong; it watches the liveness of what it found its own way. The directory merges what every
/// source says into one entry per device id.
///
/// Sources live on the directory's event loop: every call in both directions happens there.
public protocol DeviceSource: AnyObject, Sendable {
    /// For logs and enumeration: `mdns`, `peer 10.0.0.2:47300`.
    var name: String { get }
    /// Starts looking, reporting to `directory` until ``stop()``.
    func start(reportingTo directory: any DeviceSourceDelegate)
    /// Stops; nothing more is reported. The future completes once its sockets are closed.
    func stop() -> EventLoopFuture<Void>
}

/// What a ``DeviceSource`` tells the directory, on its loop.
public protocol DeviceSourceDelegate: AnyObject {
    /// The source sees `device` under `key` (an mDNS instance name, a peer's address): a
    /// later sighting under the same key replaces this one. The device's status is the
    /// source's view of its liveness.
    func source(_ source: any DeviceSource, sees device: RemoteDevice, as key: String)
    /// The source no longer sees what it saw under `key` (a goodbye, records that expired).
    func source(_ source: any DeviceSource, lost key: String)
    /// The source's first look is over (its first query window, its first poll).
    func sourceEnumerated(_ source: any DeviceSource)
    /// Something went wrong that a watcher may want to show; the source carries on.
    func source(_ source: any DeviceSource, problem: String)
}
