// `baton-bench discovery-watcher`: the in-process device watcher scripts/bench-discovery.py
// drives, so that "watcher start → added" leaves out process start-up, as its python-zeroconf
// counterpart does. Run it in the network namespace to watch.
//
// Reads commands on stdin, one a line: `start` opens the mDNS sockets and browses through a new
// DeviceDirectory (what `baton devices --watch` does), `stop` closes them, `quit` ends. Prints
// one line per event, each stamped with CLOCK_MONOTONIC in nanoseconds (the clock every process
// on the machine shares):
//   starting T          just before the directory starts
//   added T ID NAME     a device came
//   removed T ID NAME   a device went
//   enumerated T        the first query window is over
//   stopped T           the sockets are closed
import BatonClient
import BatonCore
import CLuaShim
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// One line to stdout, at once, in one write(2): not through stdio, whose fflush(NULL) would
/// wait for the stdin lock that readLine() holds on the main thread.
private func emit(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var written = 0
    while written < bytes.count {
        let n = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress! + written, $0.count - written) }
        if n <= 0 { return }
        written += n
    }
}

/// The directory now browsing, if any; touched on the watcher's loop only.
private final class WatcherState: @unchecked Sendable {
    var client: BatonClient?
    var directory: DeviceDirectory?
}

func discoveryWatcherMain() -> Never {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    let state = WatcherState()
    while let line = readLine() {
        switch line.filter({ !$0.isWhitespace }) {
        case "start":
            try! loop.submit {
                guard state.directory == nil else { return }
                let client = BatonClient(eventLoop: loop)
                // No liveness polling: the bench's zeroconf services have no agent behind them
                // to answer Describe, and the figures are about mDNS alone.
                var options = DeviceDirectory.Options()
                options.liveness = .hours(1)
                let directory = DeviceDirectory(client: client, options: options)
                state.client = client
                state.directory = directory
                // Every account: the figures are about mDNS, and each agent has an account of its own.
                _ = directory.watch(DeviceFilter(authorization: .anonymous)) { event in
                    let now = baton_monotonic_ns()
                    switch event {
                    case .added(let device): emit("added \(now) \(device.info.id) \(device.info.name)")
                    case .removed(let device): emit("removed \(now) \(device.info.id) \(device.info.name)")
                    case .updated: break
                    case .enumerationCompleted: emit("enumerated \(now)")
                    case .error(let problem): emit("error \(now) \(problem)")
                    }
                }
                emit("starting \(baton_monotonic_ns())")
                directory.start()
            }.wait()
        case "stop":
            let stopped = try! loop.submit { () -> EventLoopFuture<Void> in
                defer {
                    state.client?.shutdown()
                    state.client = nil
                    state.directory = nil
                }
                return state.directory?.stop() ?? loop.makeSucceededVoidFuture()
            }.wait()
            try? stopped.wait()
            emit("stopped \(baton_monotonic_ns())")
        case "quit":
            exit(0)
        case "":
            continue
        case let other:
            emit("error \(baton_monotonic_ns()) unknown command \(other)")
        }
    }
    exit(0)
}
