import BatonCore
import Logging
import NIOCore

/// A kind of player an app can be backed by (`player = { backend = NAME, ... }` in agent.lua):
/// its name, the fields it takes, and how it makes its ``Player``. A new kind is a new type
/// listed in ``PlayerBackends/all``; nothing else in the agent names a kind.
public protocol PlayerBackend: Sendable {
    /// The `backend` value that picks this kind.
    static var name: String { get }
    /// The fields its `player = {...}` takes besides `backend` and `on_stop`.
    static var fields: Set<String> { get }
    /// Its settings, read from `fields` (whose keys are already known to be its own); a bad
    /// value throws ``PlayerFields/fail(_:)``, naming the app and the field.
    init(_ fields: PlayerFields) throws
    /// The player for the app `context` names. Made once, when the agent starts; it starts
    /// reaching the player only at ``Player/start()``.
    func makePlayer(_ context: PlayerContext) -> any Player
}

/// What a backend knows of the app whose player it makes.
public struct PlayerContext: Sendable {
    /// The device's and the app's ids.
    public var device: String
    public var app: String
    /// The loop the player lives on (the agent's runtime loop).
    public var eventLoop: any EventLoop
    public var logger: Logger
}

/// The kinds of player the agent knows, by name.
public enum PlayerBackends {
    /// Every kind, in the order `--help` and errors list them.
    public static let all: [any PlayerBackend.Type] = [MPVBackend.self, MPDBackend.self, KodiBackend.self, MPRISBackend.self]

    /// The kind named `name`, if there is one.
    public static func named(_ name: String) -> (any PlayerBackend.Type)? {
        all.first { $0.name == name }
    }
}

/// How an app's player is configured (`player = {...}` in agent.lua): its backend's settings.
public struct PlayerConfiguration: Sendable {
    /// The backend's settings, which make the player.
    public var backend: any PlayerBackend

    public init(backend: any PlayerBackend) {
        self.backend = backend
    }

    /// The backend's name (`mpv`, `mpd`, ...).
    public var kind: String { type(of: backend).name }
}
