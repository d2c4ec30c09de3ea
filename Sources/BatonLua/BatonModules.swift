/// The module sets embedders start from.
public enum BatonModules {
    /// What `baton run` gives a script: tasks and timers, message values, JSON, logging,
    /// locks shared across processes, and devices (client and discovery, sharing one
    /// ``DeviceAccess`` made with `network`). New module objects on every call: one set per run.
    public static func standard(network: DeviceAccess.Options = DeviceAccess.Options(), runID: String? = nil) -> [any LuaModule] {
        let access = DeviceAccess(options: network)
        let locks = runID.map { LockModule(runID: $0) } ?? LockModule()
        return core() + [locks, BatchModule(), ClientModule(access: access), DiscoveryModule(access: access), PlayerModule()]
    }

    /// The modules that need nothing outside the process: tasks and timers, message values,
    /// JSON and logging.
    public static func core() -> [any LuaModule] {
        [TaskModule(), ValueModule(), JSONModule(), LogModule()]
    }
}
