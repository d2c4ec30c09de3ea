import BatonNet
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// An mpv the agent starts itself: `mpv --idle=yes --no-config --no-terminal
/// --input-ipc-server=SOCKET` and the app's own arguments, reading nothing and writing its
/// output nowhere. Confined to its loop.
final class MPVProcess: @unchecked Sendable {
    /// The process's id.
    let pid: pid_t
    /// Where it listens.
    let socket: String
    /// The loop it is confined to.
    let eventLoop: any EventLoop
    private var exitStatus: Int32?

    private init(pid: pid_t, socket: String, eventLoop: any EventLoop) {
        self.pid = pid
        self.socket = socket
        self.eventLoop = eventLoop
    }

    /// The arguments mpv is started with, before the app's own.
    static func standardArguments(socket: String) -> [String] {
        ["--idle=yes", "--no-config", "--no-terminal", "--input-ipc-server=\(socket)"]
    }

    /// Starts mpv (`executable`, looked up in PATH) listening on `socket` (a file left there
    /// is removed first), with `arguments` added, and connects to it: both, once mpv answers,
    /// within `timeout`. Fails with ``MPVError/closed(_:)`` saying why when mpv cannot be
    /// started, exits first, or does not listen in time (it is stopped then).
    static func start(
        executable: String = "mpv", socket: String, arguments: [String], on eventLoop: any EventLoop,
        timeout: TimeAmount = .seconds(5)
    ) -> EventLoopFuture<(MPVProcess, MPVConnection)> {
        eventLoop.flatSubmit {
            unlink(socket)
            let argv = [executable] + standardArguments(socket: socket) + arguments
            let pid: pid_t
            switch ProcessSpawner.start(argv, quiet: true) {
            case .success(let started): pid = started
            case .failure(let why): return eventLoop.makeFailedFuture(MPVError.closed(why.text))
            }
            let process = MPVProcess(pid: pid, socket: socket, eventLoop: eventLoop)
            let promise = eventLoop.makePromise(of: (MPVProcess, MPVConnection).self)
            process.connect(until: .now() + timeout, promise)
            return promise.futureResult
        }
    }

    /// Tries to connect every 20 ms until mpv listens, exits, or `deadline` passes.
    private func connect(until deadline: NIODeadline, _ promise: EventLoopPromise<(MPVProcess, MPVConnection)>) {
        MPVConnection.connect(path: socket, on: eventLoop, timeout: .milliseconds(500)).whenComplete { [self] result in
            switch result {
            case .success(let connection):
                promise.succeed((self, connection))
            case .failure(let error):
                if let status = reap() {
                    return promise.fail(MPVError.closed("mpv exited (status \(status)) before it listened on \(socket)"))
                }
                guard NIODeadline.now() < deadline else {
                    stop()
                    return promise.fail(MPVError.closed("mpv did not listen on \(socket) in time: \(error)"))
                }
                eventLoop.scheduleTask(in: .milliseconds(20)) { [self] () -> Void in connect(until: deadline, promise) }
            }
        }
    }

    /// Its exit status once it has exited (and it is reaped then), else nil.
    func reap() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        exitStatus = status
        return status
    }

    /// Stops it: SIGTERM, then SIGKILL if it has not exited within `grace`; reaped either way,
    /// and its socket file removed, when the future completes.
    @discardableResult
    func stop(grace: TimeAmount = .seconds(2)) -> EventLoopFuture<Void> {
        let stopped = eventLoop.makePromise(of: Void.self)
        eventLoop.execute { [self] in
            guard reap() == nil else { return stopped.succeed() }
            kill(pid, SIGTERM)
            awaitExit(by: .now() + grace, stopped)
        }
        return stopped.futureResult
    }

    /// Reaps it once it exits; at `deadline`, kills it.
    private func awaitExit(by deadline: NIODeadline, _ stopped: EventLoopPromise<Void>) {
        if reap() != nil {
            unlink(socket)
            return stopped.succeed()
        }
        guard NIODeadline.now() < deadline else {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            exitStatus = status
            unlink(socket)
            return stopped.succeed()
        }
        eventLoop.scheduleTask(in: .milliseconds(20)) { [self] () -> Void in awaitExit(by: deadline, stopped) }
    }
}
