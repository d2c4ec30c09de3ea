/// The part of the runtime core written in Lua. It runs once per state, after the modules are
/// installed, with the `baton` table as its argument: `require "baton"` finds it.
enum Prelude {
    static let source = #"""
local baton = ...
package.loaded.baton = baton
"""#
}
