import BatonCore
import BatonLua
import BatonNet
import BatonSecurity
import BatonWire
import CLuaShim
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// A device's host: its configuration (run in Lua), its apps, launch dispatch and the app
/// services it provides. Lua runs on the runtime's event loop; connections are served on
/// ``servingLoop``, which is another loop unless the agent was started with none, so that a
/// provider or launch function busy in Lua never holds up other callers' describes and
/// launches.
public final class Agent: @unchecked Sendable {
    /// The Lua runtime that ran the configuration and runs launch functions and providers.
    public let runtime: LuaRuntime
    /// Where connections are served and commands spawned; the runtime's loop when the agent
    /// was started without a serving loop of its own.
    public let servingLoop: any EventLoop
    /// The device and apps, as configured.
    /// Read on both loops; written (a rename on the network) on the runtime's.
    public var configuration: AgentConfiguration { configurationBox.withLockedValue { $0 } }
    private let configurationBox: NIOLockedValueBox<AgentConfiguration>
    /// Completes when the agent's Lua runtime ends (after ``stop()``, or a fatal error).
    public let ended: EventLoopFuture<RunOutcome>
    let logger: Logger
    /// Stops the tasks of requests whose callers gave up.
    private let canceller: TaskCanceller
    private let spawner: ProcessSpawner
    /// Client connections being served, by number.
    var connections: [Int: AgentConnection] = [:]
    var nextConnectionNumber = 1
    /// The account's trust store, when serving over TLS: who callers are, and enrolment.
    var trustStore: TrustStore?
    /// Join attempts taken, per caller address and in all.
    let joinLimiter = JoinLimiter()
    /// Provider task names by app and service (only services that channels opened to).
    private var providerTaskNames: [ProviderKey: String] = [:]
    /// The `conn` objects of the channels clients open (providers receive them).
    let channelObjects: ChannelObjects
    /// The players behind apps, by app id.
    let players: [String: any Player]
    /// The services the agent answers itself (each player app's `baton.playback`).
    let nativeServices: [ProviderKey: any NativeService]
    /// The files it serves to the targets of handoffs.
    let media: MediaSharing
    /// Provider calls on their way to the runtime's loop, and back with their answers.
    var providerCalls: LoopMailbox<ProviderCall>!
    var providerAnswers: LoopMailbox<ProviderCall>!

    /// Call on the runtime's loop.
    private init(
        runtime: LuaRuntime, servingLoop: any EventLoop, configuration: AgentConfiguration, ended: EventLoopFuture<RunOutcome>,
        logger: Logger
    ) {
        self.runtime = runtime
        self.servingLoop = servingLoop
        self.configurationBox = NIOLockedValueBox(configuration)
        self.ended = ended
        self.logger = logger
        self.spawner = ProcessSpawner(eventLoop: servingLoop)
        self.canceller = TaskCanceller(runtime: runtime, logger: logger)
        self.channelObjects = ChannelObjects(runtime: runtime, keepsRunAlive: false)
        self.players = Self.makePlayers(for: configuration, on: runtime.eventLoop, logger: logger)
        self.media = MediaSharing(eventLoop: runtime.eventLoop, logger: logger)
        self.nativeServices = Self.makeNativeServices(players: players, media: media)
        for player in players.values { player.start() }
        providerCalls = LoopMailbox(to: runtime.eventLoop, from: servingLoop) { call in call.agent.start(call) }
        providerAnswers = LoopMailbox(to: servingLoop, from: runtime.eventLoop) { call in call.answer() }
    }

    /// Runs `config` (nil: no file, the defaults alone) and returns the agent once the
    /// configuration's main chunk has returned. A configuration that fails to load or raises
    /// fails the future with the script's message (`agent.lua:3: app: id is required`).
    ///
    /// The runtime gets the standard modules (``BatonModules/standard(network:)``) and the
    /// configuration functions (``AgentConfigurationModule``). `network` is how its Lua code
    /// (launch functions, providers) reaches other devices: give it the agent's own identity
    /// (`security`), so that it dials them over mutual TLS as this device, as `baton run` does
    /// with the account; the default is plaintext, which reaches loopback agents only.
    /// Lua runs on `loop`; connections are served on `servingLoop` (give another loop, so
    /// that a busy provider holds up no one else: `baton agent` does), by default on `loop`.
    public static func start(
        config: ScriptSource?, defaults: AgentConfiguration, options: RuntimeOptions,
        network: DeviceAccess.Options = DeviceAccess.Options(), on loop: any EventLoop, servingLoop: (any EventLoop)? = nil
    ) -> EventLoopFuture<Agent> {
        let ready = loop.makePromise(of: Agent.self)
        let collector = AgentConfigurationModule(defaults: defaults)
        let source = config ?? .string("", chunkName: "defaults")
        let endedPromise = loop.makePromise(of: RunOutcome.self)
        let modules = BatonModules.standard(network: network) + [collector]
        let ended = LuaRuntime.run(source, options: options, modules: modules, on: loop) { runtime in
            runtime.retainKeepAlive()
            runtime.mainChunkCompletion = { result in
                switch result {
                case .success:
                    ready.succeed(Agent(
                        runtime: runtime, servingLoop: servingLoop ?? loop, configuration: collector.configuration,
                        ended: endedPromise.futureResult, logger: options.logger))
                case .failure(let failure):
                    ready.fail(failure)
                }
            }
        }
        ended.whenComplete { result in
            // Only matters if the configuration never finished: a promise completes once.
            switch result {
            case .success(.invalidScript(let message)):
                ready.fail(ScriptFailure(message: message, traceback: "", context: nil))
            case .failure(let error):
                ready.fail(error)
            default:
                ready.fail(ScriptFailure(message: "the configuration ended the agent", traceback: "", context: nil))
            }
            endedPromise.completeWith(result)
        }
        return ready.futureResult
    }

    /// Applies command-line overrides of the configured name and kind. Call on the loop.
    public func override(name: String?, kind: DeviceKind?) {
        runtime.eventLoop.preconditionInEventLoop()
        configurationBox.withLockedValue { configuration in
            if let name { configuration.device.name = name }
            if let kind { configuration.device.kind = kind }
        }
    }

    /// Stops the players the agent started; those it attached to are left playing, paused or
    /// stopped as their `on_stop` says. Then lets the runtime end once nothing else is pending;
    /// the future completes once the players are let go.
    @discardableResult
    public func stop() -> EventLoopFuture<Void> {
        let loop = runtime.eventLoop
        loop.execute { [media] in media.close() }
        let letGo = configuration.apps.compactMap { app -> EventLoopFuture<Void>? in
            guard let player = players[app.info.id] else { return nil }
            let command: PlaybackCommand
            switch app.playerOnStop {
            case .leave: return player.shutdown()
            case .pause: command = .pause
            case .stop: command = .stop
            }
            // Each player call ends by its own deadline; one that fails is still let go.
            return player.control(command).flatMapError { [logger] error in
                logger.warning("could not \(app.playerOnStop.rawValue) the player on stopping", metadata: [
                    "app": "\(app.info.id)", "error": "\(error)"])
                return loop.makeSucceededVoidFuture()
            }.flatMap { player.shutdown() }
        }
        let stopped = EventLoopFuture.andAllComplete(letGo, on: loop)
        stopped.whenComplete { _ in self.runtime.releaseKeepAlive() }
        return stopped
    }

    // MARK: launching

    /// Launches `request` as Rome would (see ``AgentConfiguration/resolve(_:anonymousCaller:)``). `success`
    /// means the handler or app started; a handler that cannot start gives `unknown`, with the
    /// reason logged.
    /// A caller of another account (`anonymous`) reaches only apps marked anonymous; anything
    /// else it asks for is `denied_by_remote_system`, and nothing runs. A Lua launch function is
    /// cancelled when `context` is (its caller gave up), and stopped at the request's deadline
    /// (even inside a pattern match), answering `unknown` (timed out); a launched program is
    /// never waited on.
    public func launch(
        _ request: LaunchRequest, from caller: AuthorizationKind = .sameAccount, context: RequestContext? = nil,
        logger: Logger? = nil
    ) -> EventLoopFuture<(LaunchStatus, String)> {
        // Connections live on the serving loop, so the usual call needs no hop.
        guard servingLoop.inEventLoop else {
            return servingLoop.flatSubmit { [self] in launch(request, from: caller, context: context, logger: logger) }
        }
        return launchOnLoop(request, from: caller, context: context, logger: logger ?? self.logger)
    }

    /// `logger`: the agent's, or the connection's (which carries the caller's trace id).
    private func launchOnLoop(
        _ request: LaunchRequest, from caller: AuthorizationKind, context: RequestContext?, logger: Logger
    ) -> EventLoopFuture<(LaunchStatus, String)> {
        // A stranger sees only the apps marked anonymous: the rest answer as if absent (and
        // its connection logs the refusal, at a bounded rate).
        let target = configuration.resolve(request, anonymousCaller: caller == .anonymous)
        switch target {
        case .refused(let status, let detail):
            return servingLoop.makeSucceededFuture((status, detail))
        case .handler(let handler, let uri):
            return servingLoop.makeSucceededFuture(run(handler.command, uri: uri, data: request.data, for: "handler for \(handler.scheme):", logger: logger))
        case .app(let app, let uri):
            let launched: EventLoopFuture<(LaunchStatus, String)>
            switch app.launch {
            case .command(let command):
                return servingLoop.makeSucceededFuture(run(command, uri: uri, data: request.data, for: app.info.id, logger: logger))
            case .lua(let function):
                launched = launch(app: app.info.id, function: function, uri: uri, data: request.data, context: context, logger: logger)
            case .player:
                // Players live on the runtime's loop.
                launched = runtime.eventLoop.flatSubmit { [self] in play(uri, app: app.info.id, data: request.data) }
            case .none:
                return servingLoop.makeSucceededFuture((.protocolUnavailable, "\(app.info.id) cannot be launched"))
            }
            return launched.map { [id = app.info.id] result in
                logger.info("launched", metadata: ["by": "\(id)", "uri": "\(uri)", "status": "\(result.0)"])
                return result
            }
        }
    }

    private func run(_ command: ArgvTemplate, uri: String, data: ValueDictionary, for what: String, logger: Logger) -> (LaunchStatus, String) {
        let argv = command.argv(uri: uri, data: data)
        if let problem = spawner.spawn(argv) {
            logger.error("launch failed", metadata: ["by": "\(what)", "reason": "\(problem)"])
            return (.unknown, problem)
        }
        logger.info("launched", metadata: ["by": "\(what)", "uri": "\(uri)"])
        return (.success, "")
    }

    /// Runs a launch function on the runtime's loop, stopped at the request's deadline (even
    /// inside a long pattern match) and cancelled when its caller gives up. Call on the
    /// serving loop.
    private func launch(
        app id: String, function: LuaReference, uri: String, data: ValueDictionary, context: RequestContext?, logger: Logger
    ) -> EventLoopFuture<(LaunchStatus, String)> {
        let promise = servingLoop.makePromise(of: (LaunchStatus, String).self)
        let cancellation = LuaWork(runtime: runtime, logger: logger)
        context?.whenCancelled(tell: cancellation, token: 0)
        let deadline = context?.deadline
        let start: @Sendable () -> Void = { [self] in
            startLaunchFunction(app: id, function: function, uri: uri, data: data, deadline: deadline, cancellation: cancellation, logger: logger, promise: promise)
        }
        if runtime.eventLoop.inEventLoop { start() } else { runtime.eventLoop.execute(start) }
        return promise.futureResult
    }

    /// The launch function's task. Call on the runtime's loop.
    private func startLaunchFunction(
        app id: String, function: LuaReference, uri: String, data: ValueDictionary, deadline: NIODeadline?, cancellation: LuaWork,
        logger: Logger, promise: EventLoopPromise<(LaunchStatus, String)>
    ) {
        let task = runtime.startTask(function: function, name: "launch function of \(id)", deadline: deadline, arguments: { [runtime] lua in
            lua.push(uri)
            runtime.push(.dictionary(data), on: lua)
            return 2
        }) { result in
            switch result {
            case .failure(let failure):
                promise.succeed((.unknown, failure.message))
            case .success(let results):
                let lua = results.lua
                let first = results.count > 0 ? results.index(1) : 0
                if results.count == 0 || lua.type(at: first) == .nil {
                    promise.succeed((.success, ""))
                } else if let text = lua.toString(at: first), let status = LaunchStatus(rawValue: text) {
                    promise.succeed((status, results.count > 1 ? lua.toString(at: results.index(2)) ?? "" : ""))
                } else {
                    let got = lua.describe(at: first)
                    logger.error("launch function returned something that is not a launch status", metadata: ["app": "\(id)", "returned": "\(got)"])
                    promise.succeed((.unknown, "the launch function of \(id) returned \(got), not a launch status"))
                }
            }
        }
        cancellation.started(task)
    }

    /// Cancels `task` if `context` is: its caller gave up (the deadline passed, or the
    /// connection ended).
    private func stop(_ task: LuaTaskID?, when context: RequestContext?) {
        guard let task, let context else { return }
        // No closure: this runs for every request.
        context.whenCancelled(tell: canceller, token: task.number)
    }

    // MARK: app services

    /// Whether `service` of `app` can be opened.
    public func openStatus(app id: String, service: String, from caller: AuthorizationKind = .sameAccount) -> (OpenStatus, String) {
        guard !runtime.isFinished else { return (.appUnavailable, "\(configuration.device.name) is stopping") }
        // To a stranger, an app not marked anonymous is as absent as one that is not there,
        // in the same words: opening tells it no more than Describe does.
        guard let app = configuration.app(id), caller != .anonymous || app.info.anonymous else {
            if caller == .anonymous { return (.notAuthorized, "no app \(id) on \(configuration.device.name) serves other accounts") }
            return (.appNotInstalled, "no app \(id) on \(configuration.device.name)")
        }
        guard app.services[service] != nil || nativeServices[ProviderKey(app: id, service: service)] != nil else {
            return (.appServiceUnavailable, "\(id) has no service \(service)")
        }
        return (.success, "")
    }

    /// Runs `service`'s provider with `message` in a new task. `pushConnection` pushes the
    /// `conn` argument (the channel, as Lua sees it). The provider's `table` is the response;
    /// `nil, status` answers with that status; an error is answered `failure` and logged with
    /// its traceback.
    public func serve(
        app id: String, service: String, message: ValueDictionary, pushConnection: @escaping @Sendable (LuaState) -> Void
    ) -> EventLoopFuture<ServiceReply> {
        let loop = runtime.eventLoop
        let promise = loop.makePromise(of: ServiceReply.self)
        // Connections live on the runtime's loop, so the usual call needs no hop.
        if loop.inEventLoop {
            serveOnLoop(app: id, service: service, provider: configuration.app(id)?.services[service],
                        taskName: Self.providerTaskName(app: id, service: service),
                        pushMessage: { [runtime] lua in runtime.push(.dictionary(message), on: lua) },
                        pushConnection: pushConnection, reply: promise.succeed)
        } else {
            loop.execute { [self] in
                serveOnLoop(app: id, service: service, provider: configuration.app(id)?.services[service],
                            taskName: Self.providerTaskName(app: id, service: service),
                            pushMessage: { [runtime] lua in runtime.push(.dictionary(message), on: lua) },
                            pushConnection: pushConnection, reply: promise.succeed)
            }
        }
        return promise.futureResult
    }

    /// As ``serve(app:service:message:pushConnection:)`` for a channel of a connection, on the
    /// loop, answered through `responder` (at once or later) rather than a future. A message
    /// still in its checked bytes goes straight into a Lua table, and a provider's plain
    /// message table straight into the response frame.
    func serve(channel: AgentConnection.ServiceChannel, message: ServiceMessage, responder: ServiceResponder) {
        guard let provider = channel.provider else {
            return responder.respond(ServiceReply(status: .unknown, detail: "\(channel.app) has no service \(channel.service)"))
        }
        guard runtime.eventLoop.inEventLoop else {
            return serveElsewhere(channel: channel, provider: provider, message: message, responder: responder)
        }
        // One closure per request, not one per step: this is the hot path of every channel.
        let runtime = self.runtime
        let object = channel.conn.object
        let task = runtime.startTask(function: provider, name: channel.taskName, deadline: responder.context.deadline, arguments: { lua in
            runtime.push(message, on: lua)
            runtime.push(object, on: lua)
            return 2
        }) { result in
            // A message table goes straight into the response frame when it plainly is one.
            if case .success(let results) = result, results.count > 0, results.lua.type(at: results.index(1)) == .table,
               responder.respond(source: runtime.messageSource(at: results.index(1), on: results.lua)) {
                return
            }
            responder.respond(runtime.serviceReply(from: result, handler: "the provider of \(channel.service)"))
        }
        stop(task, when: responder.context)
    }

    /// How reports name a provider's task.
    static func providerTaskName(app id: String, service: String) -> String {
        "service \(service) of \(id)"
    }

    /// As ``providerTaskName(app:service:)``, one string shared by every channel to the service.
    func sharedProviderTaskName(app id: String, service: String) -> String {
        let key = ProviderKey(app: id, service: service)
        if let name = providerTaskNames[key] { return name }
        let name = Self.providerTaskName(app: id, service: service)
        providerTaskNames[key] = name
        return name
    }

    struct ProviderKey: Hashable {
        let app: String
        let service: String
    }

    private func serveOnLoop(
        app id: String, service: String, provider: LuaReference?, taskName: String,
        pushMessage: (LuaState) -> Void, pushConnection: (LuaState) -> Void, reply: @escaping (ServiceReply) -> Void
    ) {
        guard let provider else {
            return reply(ServiceReply(status: .unknown, detail: "\(id) has no service \(service)"))
        }
        runtime.startTask(function: provider, name: taskName, arguments: { lua in
            pushMessage(lua)
            pushConnection(lua)
            return 2
        }) { [runtime] result in
            reply(runtime.serviceReply(from: result, handler: "the provider of \(service)"))
        }
    }
}

/// A Lua task started for a request that is served on another loop: cancelled when its
/// caller gives up, whether that comes before the task has started or after. Registered with
/// the request's context as its canceller, so a request needs no closure of its own.
class LuaWork: RequestCanceller, @unchecked Sendable {
    private let runtime: LuaRuntime
    private let logger: Logger
    /// Both touched on the runtime's loop only.
    private var task: LuaTaskID?
    private(set) var cancelled = false

    init(runtime: LuaRuntime, logger: Logger) {
        self.runtime = runtime
        self.logger = logger
    }

    /// The caller gave up. Call on any loop.
    func cancel(_ token: Int = 0) {
        guard runtime.eventLoop.inEventLoop else { return runtime.eventLoop.execute { self.cancel() } }
        cancelled = true
        if let task { stop(task) }
    }

    /// The task was started (nil: it was not). Call on the runtime's loop.
    func started(_ task: LuaTaskID?) {
        self.task = task
        if cancelled, let task { stop(task) }
    }

    private func stop(_ task: LuaTaskID) {
        if runtime.cancelTask(task) { logger.notice("cancelled a task whose caller gave up", metadata: ["task": "\(task)"]) }
    }
}

/// Cancels the task of a request whose caller gave up: one for the agent, which every request
/// registers (``RequestContext/whenCancelled(tell:token:)``) instead of a closure of its own.
final class TaskCanceller: RequestCanceller, @unchecked Sendable {
    let runtime: LuaRuntime
    let logger: Logger

    init(runtime: LuaRuntime, logger: Logger) {
        self.runtime = runtime
        self.logger = logger
    }

    /// `token` is a ``LuaTaskID``'s number.
    func cancel(_ token: Int) {
        let task = LuaTaskID(number: token)
        if runtime.cancelTask(task) { logger.notice("cancelled a task whose caller gave up", metadata: ["task": "\(task)"]) }
    }
}
