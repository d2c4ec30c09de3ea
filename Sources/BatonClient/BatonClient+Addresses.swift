import BatonCore
import NIOCore

// The same calls for an agent known only by its `host:port`: it may be any device (of this
// device's account, unless ``BatonClient/Options/unlistedAgents`` says otherwise).
extension BatonClient {
    /// ``launch(_:on:)-(_,DeviceTarget)`` on the agent at `address`.
    public func launch(_ request: LaunchRequest, on address: DeviceAddress) -> EventLoopFuture<(LaunchStatus, String)> {
        launch(request, on: DeviceTarget(address))
    }

    /// As ``launch(_:on:)-(_,DeviceAddress)``, with async/await.
    public func launch(_ request: LaunchRequest, on address: DeviceAddress) async -> (LaunchStatus, String) {
        (try? await launch(request, on: DeviceTarget(address)).get()) ?? (.unknown, "")
    }

    /// ``describe(_:)-(DeviceTarget)`` of the agent at `address`.
    public func describe(_ address: DeviceAddress) -> EventLoopFuture<(DeviceInfo, [AppInfo])> {
        describe(DeviceTarget(address))
    }

    /// ``openService(_:app:on:)-(_,_,DeviceTarget)`` on the agent at `address`.
    public func openService(_ service: String, app: String, on address: DeviceAddress) -> EventLoopFuture<(AppServiceConnection?, OpenStatus, String)> {
        openService(service, app: app, on: DeviceTarget(address))
    }

    /// As ``openService(_:app:on:)-(_,_,DeviceAddress)``, with async/await.
    public func openService(_ service: String, app: String, on address: DeviceAddress) async -> (AppServiceConnection?, OpenStatus, String) {
        (try? await openService(service, app: app, on: DeviceTarget(address)).get()) ?? (nil, .unknown, "")
    }

    /// ``send(_:to:app:on:)-(_,_,_,DeviceTarget)`` on the agent at `address`.
    public func send(_ message: ValueDictionary, to service: String, app: String, on address: DeviceAddress) -> EventLoopFuture<ServiceReply> {
        send(message, to: service, app: app, on: DeviceTarget(address))
    }
}
