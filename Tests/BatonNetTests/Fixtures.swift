import BatonClient
import BatonCore

/// The agent configuration most tests run. `@DIR@` is the agent's directory.
enum Fixtures {
    static let player = "org.test.player"
    static let alt = "org.test.alt"
    static let status = "org.test.status"
    static let argv = "org.test.argv"
    static let unstartable = "org.test.unstartable"
    static let services = "org.test.services"

    /// A shell script run as an argv (never through a shell of the agent's): it writes its
    /// argument count and each argument in <brackets> to the file named by its first argument.
    /// No braces, so the argv template leaves it alone.
    static let writeArguments = #"out=$1; shift; (printf "%s\n" "$#"; for a in "$@"; do printf "<%s>\n" "$a"; done) > "$out.tmp" && mv "$out.tmp" "$out""#

    static let config = #"""
        device{ name = "Net Test", kind = "tv", model = "Model T", manufacturer = "ACME" }

        local launches = {}
        local function record(who, uri, data)
          launches[#launches + 1] = { who = who, uri = uri, data = data }
        end
        local closed = {}
        local function touch(path)
          if path then
            local f = assert(io.open(path, "w"))
            f:write("started")
            f:close()
          end
        end
        local WRITE_ARGS = [[\#(writeArguments)]]

        -- The device's handler for shared: URIs, which an app takes too.
        handler{ scheme = "shared", run = { "/bin/sh", "-c", WRITE_ARGS, "sh", "{data.out}", "{uri}" } }
        -- A handler whose program does not exist.
        handler{ scheme = "nohandler", run = { "/nonexistent/baton-test-handler", "{uri}" } }

        app{ id = "org.test.player", name = "Player", schemes = { "media" },
             launch = function(uri, data) record("player", uri, data) return "success" end }
        app{ id = "org.test.alt", name = "Alt", schemes = { "media", "alt", "shared" },
             launch = function(uri, data) record("alt", uri, data) end }
        -- A <close> variable that writes "closed" to `path` when its scope ends (also when
        -- the task is cancelled).
        local function closing(path)
          return setmetatable({}, { __close = function() touch(path) end })
        end

        -- status:NAME makes the launch function return NAME (nil, error: special cases);
        -- status:forever never returns (data.closed is written when it is cancelled).
        app{ id = "org.test.status", schemes = { "status" },
             launch = function(uri, data)
               local s = uri:sub(#"status:" + 1)
               if s == "forever" then
                 local mark <close> = closing(data.closed)
                 baton.sleep(3600)
               end
               if s == "nil" then return nil end
               if s == "nothing" then return end
               if s == "error" then error("the launch function broke") end
               if s == "number" then return 42 end
               return s, "detail of " .. s
             end }
        app{ id = "org.test.argv", name = "Argv", schemes = { "argv" },
             run = { "/bin/sh", "-c", WRITE_ARGS, "sh", "{data.out}", "{uri}", "{data.title}" } }
        app{ id = "org.test.unstartable", schemes = { "nostart" },
             run = { "/nonexistent/baton-test-program", "{uri}" } }

        app{ id = "org.test.services", name = "Services", anonymous = true,
             attributes = { tier = "test", level = 3 },
             services = {
               echo = function(msg) return msg end,
               launches = function()
                 local last = launches[#launches]
                 if not last then return { count = 0 } end
                 return { count = #launches, who = last.who, uri = last.uri, data = last.data }
               end,
               -- Asks the client msg.question on the same channel; returns its answer.
               ask = function(msg, conn)
                 local reply, status = conn:send(msg.question)
                 if msg.tag then closed["ask:" .. msg.tag] = status end
                 return { reply = reply or {}, status = status }
               end,
               watch = function(msg, conn)
                 conn.on_closed = function(status) closed[msg.tag] = status end
                 return { watching = msg.tag }
               end,
               closed = function(msg) return { status = closed[msg.tag] or "open" } end,
               hangup = function(msg, conn) conn:close() return { ok = true } end,
               sleep = function(msg, conn)
                 conn.on_closed = function(status) closed[msg.tag or "sleep"] = status end
                 touch(msg.started)
                 baton.sleep(msg.seconds)
                 return { slept = msg.seconds }
               end,
               busy = function() return nil, "resource_limits_exceeded" end,
               -- Never answers; msg.closed is written when it is cancelled.
               forever = function(msg)
                 local mark <close> = closing(msg.closed)
                 touch(msg.started)
                 baton.sleep(3600)
               end,
               broken = function() error("the provider broke") end,
             } }
        """#

    /// A service message's reply, or a failure naming the status.
    static func message(_ reply: ServiceReply, sourceLocation: SourceLocation = #_sourceLocation) -> ValueDictionary {
        #expect(reply.status == .success, "\(reply)", sourceLocation: sourceLocation)
        return reply.message ?? [:]
    }
}

import Testing
