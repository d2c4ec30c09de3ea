/// `baton.player(dev [, app])`: a player a script holds, with `p:state()`, `p:play(uri, opts)`,
/// `p:pause()`, `p:resume()`, `p:stop()`, `p:seek(s)`, `p:seek_by(d)`, `p:volume(v)`,
/// `p:mute(b)`, `p:on("changed", fn)` (the agent pushes the player's own changes) and
/// `p:close()`. Written in Lua (Lua/player.lua) over `baton.find`, `dev:apps` and
/// `baton.appservice`, so it needs the ``ClientModule``.
public final class PlayerModule: LuaModule, @unchecked Sendable {
    public init() {}

    public func install(in runtime: LuaRuntime, table m: Int32) throws {
        runtime.state.pushValue(at: m)
        try runtime.runChunk(Self.source, named: "baton.player", arguments: 1)
    }

    /// Lua/player.lua, embedded in the binary by SwiftPM (as batch.lua).
    static let source = String(decoding: PackageResources.player_lua, as: UTF8.self)
}
