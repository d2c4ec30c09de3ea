import BatonCore
import BatonLua
import NIOCore
import NIOPosix

/// What a script run in-process left behind: values it handed to `capture`, conversion
/// errors, and the failures the runtime reported.
final class ScriptRecord: @unchecked Sendable {
    var values: [Value] = []
    var errors: [String] = []
    var failures: [ScriptFailure] = []
}

/// Runs `code` in a fresh runtime with the standard modules (reaching devices as `network`
/// says). The script gets `capture(v)`, which converts `v` to a ``Value`` (recording the value
/// or the conversion error), and `provide(i)`, which pushes `provided[i]` (1-based).
func runScript(
    _ code: String,
    timeout: Duration? = nil,
    maxMemory: Int? = nil,
    provided: [Value] = [],
    network: DeviceAccess.Options = DeviceAccess.Options(),
    configure: @escaping @Sendable (LuaRuntime) throws -> Void = { _ in }
) async throws -> (RunOutcome, ScriptRecord) {
    let record = ScriptRecord()
    let options = RuntimeOptions(timeout: timeout, maxMemory: maxMemory) { failure in
        record.failures.append(failure)
    }
    // A loop of its own: other tests' busy loops must not delay this one's timers.
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { group.shutdownGracefully { _ in } }
    let outcome = try await LuaRuntime.run(
        .string(code, chunkName: "test"), options: options, modules: BatonModules.standard(network: network), on: group.next()
    ) { runtime in
        runtime.registerGlobal("capture") { call in
            do {
                record.values.append(try call.runtime.value(at: 1, on: call.lua))
            } catch {
                record.errors.append(String(describing: error))
            }
            return .values(0)
        }
        runtime.registerGlobal("provide") { call in
            let i = Int(try call.integer(1))
            call.runtime.push(provided[i - 1], on: call.lua)
            return .values(1)
        }
        try configure(runtime)
    }.get()
    return (outcome, record)
}
