import BatonCore
import BatonLua

/// What an agent hosts: the device, its default handlers per scheme, and its apps.
public struct AgentConfiguration: Sendable {
    /// A default handler: how the device opens a scheme when no app is named.
    public struct Handler: Sendable, Equatable {
        public var scheme: String
        public var command: ArgvTemplate

        public init(scheme: String, command: ArgvTemplate) {
            self.scheme = scheme
            self.command = command
        }
    }

    /// How an app is launched.
    public enum LaunchAction: Sendable {
        /// A Lua function `(uri, data)` returning a status string (nil or nothing means success).
        case lua(LuaReference)
        /// A command run with the URI substituted.
        case command(ArgvTemplate)
        /// The app's player plays the URI (an app with `player` and no launch of its own).
        case player
        /// The app cannot be launched, only its services opened.
        case none
    }

    /// An app and how to run it.
    public struct App: Sendable {
        public var info: AppInfo
        public var launch: LaunchAction
        /// Service name → provider function `(msg, conn)`.
        public var services: [String: LuaReference]
        /// The player behind the app, which answers its `baton.playback`.
        public var player: PlayerConfiguration?
        /// What the agent does to that player when it stops (`player = { on_stop = ... }`).
        public var playerOnStop: PlayerStopAction = .leave

        /// Whether the app takes `scheme`.
        public func takes(_ scheme: String) -> Bool { info.schemes.contains(scheme) }
    }

    /// What an agent that stops does to a player: a player it started (an mpv of its own)
    /// always ends with it; one it attached to (MPD, an mpv already running) is left playing,
    /// paused or stopped.
    public enum PlayerStopAction: String, Sendable, CaseIterable {
        case leave, pause, stop
    }

    public var device: DeviceInfo
    /// Scheme → handler.
    public var handlers: [String: Handler]
    /// In the order configured.
    public var apps: [App]

    public init(device: DeviceInfo, handlers: [String: Handler] = [:], apps: [App] = []) {
        self.device = device
        self.handlers = handlers
        self.apps = apps
    }

    /// The app with `id`, if the device has it.
    public func app(_ id: String) -> App? { apps.first { $0.info.id == id } }
}
