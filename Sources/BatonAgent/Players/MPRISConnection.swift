import BatonCore
import BatonNet
import CSystemd
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Why a call to an MPRIS player failed.
enum MPRISError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nobody owns the player's bus name: it is not running, or not on this bus.
    case notOnBus(String)
    /// The player (or the bus) answered with a D-Bus error.
    case failed(name: String, message: String)
    /// No answer: by the deadline, or the player left the bus without answering.
    case noReply(String)
    /// The bus could not be reached, or the connection to it was lost or closed.
    case closed(String)
    /// An answer that is not what MPRIS says it is.
    case garbage(String)

    var description: String {
        switch self {
        case .notOnBus(let name): "\(name) is not on the bus"
        case .failed(let name, let message): "\(message) (\(name))"
        case .noReply(let text), .closed(let text), .garbage(let text): text
        }
    }
}

/// What the player (or the bus, of the player) said without being asked.
enum MPRISSignal: Sendable, Equatable {
    /// `Seeked`: the player jumped to this position, in microseconds.
    case seeked(Int64)
    /// `PropertiesChanged` of the player's interface: the new values sent, and the names of
    /// those changed without their value.
    case changed([String: DBusValue], invalidated: [String])
    /// The player's bus name got an owner (its unique name) or lost it (nil): the player
    /// started or went away.
    case owner(String?)
}

/// One connection to a D-Bus bus (sd-bus) through which one MPRIS player, `busName`, is
/// called: its own thread owns the bus (sd-bus objects are not thread-safe, and its calls
/// block), runs every call queued to it, and answers through promises on ``eventLoop``; each
/// call ends by its deadline. The player's `Seeked` and `PropertiesChanged` signals, and the
/// changes of its bus name's owner, reach ``onSignal`` on the loop. Safe to call from any thread.
final class MPRISConnection: @unchecked Sendable {
    static let objectPath = "/org/mpris/MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"
    static let rootInterface = "org.mpris.MediaPlayer2"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    let eventLoop: any EventLoop
    /// The player's well-known name (`org.mpris.MediaPlayer2.mpv`).
    let busName: String
    /// The bus's address; nil for the session bus (`DBUS_SESSION_BUS_ADDRESS`).
    let address: String?
    /// The deadline of a call that names none.
    let callTimeout: TimeAmount
    let logger: Logger

    /// Called on the loop with each signal; set on the loop.
    var onSignal: ((MPRISSignal) -> Void)?
    /// Called on the loop once if the bus connection is lost (not after ``close()``); set on the loop.
    var onClosed: ((MPRISError) -> Void)?

    private struct Shared {
        var jobs: [@Sendable (OpaquePointer?) -> Void] = []
        var closing = false
        var closed = false
        /// The unique name that owns ``busName`` now, as the bus last said.
        var owner: String?
    }

    private let shared = NIOLockedValueBox(Shared())
    /// A pipe that wakes the bus thread when a job is queued: the thread polls its read end;
    /// both are closed when the connection is freed.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// The calls sent and not answered yet, by cookie. The bus thread's only.
    private var pending: [UInt64: OncePromise<[DBusValue]>] = [:]

    private init(busName: String, address: String?, callTimeout: TimeAmount, wake: (Int32, Int32), on eventLoop: any EventLoop, logger: Logger) {
        self.busName = busName
        self.address = address
        self.callTimeout = callTimeout
        (wakeRead, wakeWrite) = wake
        self.eventLoop = eventLoop
        self.logger = logger
    }

    deinit {
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    /// Connects to the bus at `address` (nil: the session bus), starts the connection's thread,
    /// and listens for `busName`'s signals; answered once it is ready, or failed with
    /// ``MPRISError/closed(_:)`` (no bus there) or ``MPRISError/noReply(_:)`` by `callTimeout`.
    /// Whether the player is on the bus is ``owner``'s to say, not this.
    static func open(
        busName: String, address: String?, callTimeout: TimeAmount, on eventLoop: any EventLoop, logger: Logger
    ) -> EventLoopFuture<MPRISConnection> {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            return eventLoop.makeFailedFuture(MPRISError.closed("pipe: \(String(cString: strerror(errno)))"))
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        let connection = MPRISConnection(busName: busName, address: address, callTimeout: callTimeout, wake: (ends[0], ends[1]), on: eventLoop, logger: logger)
        let opened = OncePromise(eventLoop.makePromise(of: MPRISConnection.self))
        let bus = address ?? "the session bus"
        let deadline = eventLoop.scheduleTask(in: callTimeout + .seconds(1)) {
            if opened.complete(.failure(MPRISError.noReply("\(bus) did not answer within \(callTimeout.words)"))) { connection.close() }
        }
        opened.promise.futureResult.whenComplete { _ in deadline.cancel() }
        let thread = Thread { connection.run(opened) }
        thread.name = "baton-mpris"
        thread.start()
        return opened.promise.futureResult
    }

    /// Whether the connection is usable: not closed, and not lost.
    var isOpen: Bool { shared.withLockedValue { !$0.closing && !$0.closed } }

    /// The unique name of the player's bus name's owner, nil when nobody owns it.
    var owner: String? { shared.withLockedValue { $0.owner } }

    /// Closes the connection: calls under way fail with ``MPRISError/closed(_:)``; the thread ends.
    func close() {
        shared.withLockedValue { $0.closing = true }
        wake()
    }

    /// Calls `member` of `interface` on the player's object with `arguments`, answered with
    /// the reply's values, or failed with an ``MPRISError`` (``MPRISError/notOnBus(_:)`` when
    /// nobody owns the bus name) by `timeout` (nil: ``callTimeout``).
    func call(_ interface: String, _ member: String, _ arguments: [DBusArgument] = [], timeout: TimeAmount? = nil) -> EventLoopFuture<[DBusValue]> {
        let wait = timeout ?? callTimeout
        let call = OncePromise(eventLoop.makePromise(of: [DBusValue].self))
        let name = busName
        // sd-bus ends the call by `wait` itself; this is in case its thread is stuck.
        let deadline = eventLoop.scheduleTask(in: wait + .milliseconds(500)) {
            call.complete(.failure(MPRISError.noReply("\(name) did not answer \(member) within \(wait.words)")))
        }
        call.promise.futureResult.whenComplete { _ in deadline.cancel() }
        submit { [self] bus in
            guard let bus else {
                call.complete(.failure(MPRISError.closed("the connection to the bus is closed")))
                return
            }
            send(on: bus, interface, member, arguments, timeout: wait, call)
        }
        return call.promise.futureResult
    }

    /// The player's property `name` (of the player interface unless `interface` says otherwise).
    func property(_ name: String, of interface: String = MPRISConnection.playerInterface, timeout: TimeAmount? = nil) -> EventLoopFuture<DBusValue> {
        call(Self.propertiesInterface, "Get", [.string(interface), .string(name)], timeout: timeout).flatMapThrowing { values in
            guard let value = values.first else { throw MPRISError.garbage("\(self.busName) answered Get \(name) with nothing") }
            return value
        }
    }

    /// Every property of `interface` (the player's unless it says otherwise), in one call.
    func properties(of interface: String = MPRISConnection.playerInterface, timeout: TimeAmount? = nil) -> EventLoopFuture<[String: DBusValue]> {
        call(Self.propertiesInterface, "GetAll", [.string(interface)], timeout: timeout).flatMapThrowing { values in
            guard let all = values.first?.dictionaryValue else { throw MPRISError.garbage("\(self.busName) answered GetAll with \(values)") }
            return all
        }
    }

    /// Sets the player's property `name` to `value`.
    func set(_ name: String, _ value: DBusArgument, timeout: TimeAmount? = nil) -> EventLoopFuture<Void> {
        call(Self.propertiesInterface, "Set", [.string(Self.playerInterface), .string(name), .variant(value)], timeout: timeout).map { _ in }
    }

    // MARK: The bus thread

    private func submit(_ job: @escaping @Sendable (OpaquePointer?) -> Void) {
        let queued = shared.withLockedValue { shared in
            guard !shared.closing, !shared.closed else { return false }
            shared.jobs.append(job)
            return true
        }
        guard queued else { return job(nil) }
        wake()
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    /// The thread's life: open the bus, serve it until closed or lost, then fail what is left.
    private func run(_ opened: OncePromise<MPRISConnection>) {
        let bus: OpaquePointer
        switch setUp() {
        case .success(let made): bus = made
        case .failure(let error):
            _ = opened.complete(.failure(error))
            finish(bus: nil, reason: nil)
            return
        }
        guard opened.complete(.success(self)) else {
            // Too late: the opener gave up on it.
            finish(bus: bus, reason: nil)
            return
        }
        let reason = serve(bus)
        if let reason { logger.debug("lost the bus", metadata: ["bus": "\(address ?? "session")", "reason": "\(reason)"]) }
        finish(bus: bus, reason: reason)
    }

    /// Connects, installs the signal matches, and reads who owns the player's name now.
    private func setUp() -> Result<OpaquePointer, MPRISError> {
        var made: OpaquePointer?
        var result: Int32
        let bus = address ?? "the session bus"
        if let address {
            result = sd_bus_new(&made)
            if result >= 0 { result = address.withCString { sd_bus_set_address(made, $0) } }
            if result >= 0 { result = sd_bus_set_bus_client(made, 1) }
            if result >= 0 { result = sd_bus_start(made) }
        } else {
            result = sd_bus_open_user(&made)
        }
        guard result >= 0, let made else {
            if let made { sd_bus_close_unref(made) }
            let hint = address == nil && ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] == nil
                ? " (DBUS_SESSION_BUS_ADDRESS is not set)" : ""
            return .failure(.closed("cannot reach \(bus)\(hint): \(String(cString: strerror(-result)))"))
        }
        sd_bus_set_method_call_timeout(made, microseconds(callTimeout))
        let this = Unmanaged.passUnretained(self).toOpaque()
        let rules = [
            "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
                + "member='NameOwnerChanged',arg0='\(busName)'",
            // Every MPRIS player has this path, so these match other players' signals too: only
            // the owner's are passed on (see ``signalled(_:)``).
            "type='signal',path='\(Self.objectPath)',interface='\(Self.playerInterface)',member='Seeked'",
            "type='signal',path='\(Self.objectPath)',interface='\(Self.propertiesInterface)',member='PropertiesChanged',"
                + "arg0='\(Self.playerInterface)'",
        ]
        for rule in rules {
            // Synchronous: the matches are in place before any call of ours is answered.
            let added = sd_bus_add_match(made, nil, rule, mprisSignal, this)
            guard added >= 0 else {
                sd_bus_close_unref(made)
                return .failure(.closed("\(bus) refused a signal match: \(String(cString: strerror(-added)))"))
            }
        }
        switch callNow(on: made, "GetNameOwner", [.string(busName)]) {
        case .success(let values): shared.withLockedValue { $0.owner = values.first?.stringValue }
        case .failure(.notOnBus): shared.withLockedValue { $0.owner = nil }
        case .failure(let error):
            sd_bus_close_unref(made)
            return .failure(error)
        }
        return .success(made)
    }

    /// Runs jobs and dispatches the bus until closed (nil) or lost (why).
    private func serve(_ bus: OpaquePointer) -> MPRISError? {
        var drained = [UInt8](repeating: 0, count: 64)
        while true {
            let (jobs, closing) = shared.withLockedValue { shared in
                defer { shared.jobs = [] }
                return (shared.jobs, shared.closing)
            }
            if closing { return nil }
            for job in jobs { job(bus) }
            while true {
                let processed = sd_bus_process(bus, nil)
                if processed < 0 { return .closed("the connection to the bus broke: \(String(cString: strerror(-processed)))") }
                if processed == 0 { break }
            }
            if sd_bus_is_open(bus) <= 0 { return .closed("the bus closed the connection") }
            let events = sd_bus_get_events(bus)
            var fds = [
                pollfd(fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: events < 0 ? Int32(POLLIN) : events), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            // At most a second, so a missed wake costs no more.
            var wait: Int32 = 1000
            var until: UInt64 = 0
            if sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max {
                let now = monotonicMicroseconds()
                wait = until <= now ? 0 : Int32(min(1000, (until - now + 999) / 1000))
            }
            _ = poll(&fds, 2, wait)
            if fds[1].revents & Int16(POLLIN) != 0 { while read(wakeRead, &drained, drained.count) > 0 {} }
        }
    }

    /// Fails every call still waiting and every job still queued, and lets the bus go.
    private func finish(bus: OpaquePointer?, reason: MPRISError?) {
        let failure = reason ?? .closed("the connection to the bus is closed")
        for call in pending.values { call.complete(.failure(failure)) }
        pending = [:]
        if let bus { sd_bus_close_unref(bus) }
        let late = shared.withLockedValue { shared in
            shared.closed = true
            defer { shared.jobs = [] }
            return shared.jobs
        }
        for job in late { job(nil) }
        if let reason { eventLoop.execute { self.onClosed?(reason) } }
    }

    /// Builds a method call to `destination` (the player unless said) with `arguments`.
    private func message(
        on bus: OpaquePointer, to destination: String, path: String, _ interface: String, _ member: String, _ arguments: [DBusArgument]
    ) throws -> OpaquePointer {
        var made: OpaquePointer?
        let result = sd_bus_message_new_method_call(bus, &made, destination, path, interface, member)
        guard result >= 0, let made else { throw DBusMessageError(description: "cannot make \(member): \(String(cString: strerror(-result)))") }
        do {
            // A name nobody owns is an error at once, not a service to start.
            sd_bus_message_set_auto_start(made, 0)
            for argument in arguments { try DBusMessage.append(argument, to: made) }
        } catch {
            sd_bus_message_unref(made)
            throw error
        }
        return made
    }

    private func send(on bus: OpaquePointer, _ interface: String, _ member: String, _ arguments: [DBusArgument], timeout: TimeAmount, _ call: OncePromise<[DBusValue]>) {
        let made: OpaquePointer
        do {
            made = try message(on: bus, to: busName, path: Self.objectPath, interface, member, arguments)
        } catch {
            call.complete(.failure(MPRISError.garbage("\(error)")))
            return
        }
        defer { sd_bus_message_unref(made) }
        let sent = sd_bus_call_async(bus, nil, made, mprisReply, Unmanaged.passUnretained(self).toOpaque(), microseconds(timeout))
        guard sent >= 0 else {
            call.complete(.failure(MPRISError.closed("cannot send \(member): \(String(cString: strerror(-sent)))")))
            return
        }
        var cookie: UInt64 = 0
        sd_bus_message_get_cookie(made, &cookie)
        pending[cookie] = call
    }

    /// A call to the bus itself (`org.freedesktop.DBus`), answered before this returns.
    private func callNow(on bus: OpaquePointer, _ member: String, _ arguments: [DBusArgument]) -> Result<[DBusValue], MPRISError> {
        let made: OpaquePointer
        do {
            made = try message(on: bus, to: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", "org.freedesktop.DBus", member, arguments)
        } catch {
            return .failure(.garbage("\(error)"))
        }
        defer { sd_bus_message_unref(made) }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        let result = sd_bus_call(bus, made, microseconds(callTimeout), &error, &reply)
        defer { if let reply { sd_bus_message_unref(reply) } }
        guard result >= 0, let reply else {
            let name = error.name.map { String(cString: $0) } ?? "errno \(-result)"
            let text = error.message.map { String(cString: $0) } ?? String(cString: strerror(-result))
            return .failure(failure(name: name, message: text, member: member))
        }
        do {
            return .success(try DBusMessage.readAll(reply))
        } catch {
            return .failure(.garbage("the bus answered \(member) with \(error)"))
        }
    }

    /// A method reply (or error) to one of ours: its call is answered.
    fileprivate func answered(_ message: OpaquePointer) {
        var cookie: UInt64 = 0
        guard sd_bus_message_get_reply_cookie(message, &cookie) >= 0, let call = pending.removeValue(forKey: cookie) else { return }
        if sd_bus_message_is_method_error(message, nil) > 0 {
            let error = sd_bus_message_get_error(message)
            let name = error?.pointee.name.map { String(cString: $0) } ?? "?"
            let text = error?.pointee.message.map { String(cString: $0) } ?? ""
            call.complete(.failure(failure(name: name, message: text, member: nil)))
            return
        }
        do {
            call.complete(.success(try DBusMessage.readAll(message)))
        } catch {
            call.complete(.failure(MPRISError.garbage("\(busName) answered with \(error)")))
        }
    }

    /// A signal one of the matches let through: passed on to the loop if it is the player's.
    fileprivate func signalled(_ message: OpaquePointer) {
        let member = sd_bus_message_get_member(message).map { String(cString: $0) }
        let sender = sd_bus_message_get_sender(message).map { String(cString: $0) }
        guard let values = try? DBusMessage.readAll(message) else { return }
        let signal: MPRISSignal
        switch member {
        case "NameOwnerChanged":
            guard values.count == 3, values[0].stringValue == busName, let new = values[2].stringValue else { return }
            let owner = new.isEmpty ? nil : new
            shared.withLockedValue { $0.owner = owner }
            signal = .owner(owner)
        case "Seeked":
            guard let sender, sender == owner, let position = values.first?.int64Value else { return }
            signal = .seeked(position)
        case "PropertiesChanged":
            guard let sender, sender == owner, values.count >= 2, let changed = values[1].dictionaryValue else { return }
            let invalidated = values.count > 2 ? values[2].arrayValue?.compactMap(\.stringValue) ?? [] : []
            signal = .changed(changed, invalidated: invalidated)
        default:
            return
        }
        eventLoop.execute { self.onSignal?(signal) }
    }

    private func failure(name: String, message: String, member: String?) -> MPRISError {
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            return .notOnBus(busName)
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut":
            return .noReply("\(busName) did not answer\(member.map { " " + $0 } ?? ""): \(message)")
        default:
            return .failed(name: name, message: message)
        }
    }
}

/// sd-bus's callback for a reply: `userdata` is the connection (kept alive by its thread).
private func mprisReply(_ message: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
    guard let message, let userdata else { return 0 }
    Unmanaged<MPRISConnection>.fromOpaque(userdata).takeUnretainedValue().answered(message)
    return 1
}

/// sd-bus's callback for a matched signal.
private func mprisSignal(_ message: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
    guard let message, let userdata else { return 0 }
    Unmanaged<MPRISConnection>.fromOpaque(userdata).takeUnretainedValue().signalled(message)
    // Others may match it too.
    return 0
}

/// A promise completed once, by whichever comes first: an answer, a failure, or a deadline.
final class OncePromise<Value: Sendable>: Sendable {
    let promise: EventLoopPromise<Value>
    private let done = NIOLockedValueBox(false)

    init(_ promise: EventLoopPromise<Value>) {
        self.promise = promise
    }

    /// Completes the promise with `result` unless it already was; whether this did.
    @discardableResult
    func complete(_ result: Result<Value, any Error>) -> Bool {
        let first = done.withLockedValue { done in
            defer { done = true }
            return !done
        }
        if first { promise.completeWith(result) }
        return first
    }
}

private func microseconds(_ amount: TimeAmount) -> UInt64 {
    UInt64(max(1, amount.nanoseconds / 1000))
}

private func monotonicMicroseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
}
