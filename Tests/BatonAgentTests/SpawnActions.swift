import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Has a spawned child close every descriptor from 3 up (glibc 2.34's closefrom action, which
/// Swift does not import). All test suites share one process: a player, a bus or a Kodi that
/// outlives a test must not hold another test's pipes open (a CLI test then waits for an
/// output that never closes).
func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
    }
}
