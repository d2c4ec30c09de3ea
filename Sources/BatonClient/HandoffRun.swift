import BatonCore
import Foundation
import NIOCore

extension BatonClient {
    /// Moves what `source` plays to `target`, make-before-break: reads the source, starts the
    /// target where the source will be by then (muted while it proves it plays: loaded, and
    /// advancing at real speed), measures both players (a line through several readings of
    /// each, lined up at its steps), corrective seeks aimed by that measure if the target is
    /// elsewhere, and only then unmutes the target and pauses (or stops, or keeps) the source
    /// in the same instant. Any failure before that leaves the source playing as it was and
    /// the target stopped. A source and target that are one device (`same_device`), and a
    /// target that plays when ``HandoffOptions/busy`` refuses it (`target_busy`), are refused
    /// before anything is touched.
    /// Never fails: the report says how it went. With ``HandoffOptions/key``, a handoff that
    /// took effect under that key within the window is not done again (see ``HandoffKeys``).
    public func handoff(from source: DeviceTarget, to target: DeviceTarget, options: HandoffOptions = HandoffOptions()) async -> HandoffReport {
        let run = { await HandoffRun(client: self, source: source, target: target, options: options).run() }
        guard let key = options.key else { return await run() }
        return await HandoffKeys.once(key: key, window: options.keyWindow, wait: options.timeout, run)
    }
}

/// One handoff, phase by phase (see ``BatonClient/handoff(from:to:options:)``).
final class HandoffRun: @unchecked Sendable {
    let client: BatonClient
    let sourceDevice: DeviceTarget
    let targetDevice: DeviceTarget
    let options: HandoffOptions
    private let started = Date()
    private let deadline: Date
    private var report = HandoffReport(status: .success)
    private var phaseStarted = Date()
    private var source: PlaybackPeer?
    private var target: PlaybackPeer?
    /// Whether the target was asked to play, and so is to be stopped if the handoff fails.
    private var targetTouched = false
    /// How long the target says a seek takes it (its state's or proof's `seek_latency`).
    private var targetSeekLatency: Double?

    /// Time the target is given to start after a play arrives (mpv takes 4–34 ms
    /// from loadfile to playing).
    static let startAllowance = 0.01
    /// Time a playing target loses to a seek (it holds still until it plays again), before
    /// the first seek teaches better, when the target does not say its own seek latency.
    static let seekAllowance = 0.01
    /// How long a playing player's position is read for a line: at least `sampleLeast` and
    /// two steps of its position, at most `sampleMost` or four of its steps where it says
    /// they are further apart (mpv's are 50–100 ms apart, VLC's ~280 ms).
    static let sampleLeast = 0.05
    static let sampleMost = 0.4
    /// How long after the target is asked to play the source's readings begin.
    static let sampleDelayMs = 60
    /// How close a paused target is put to the source (seconds).
    static let pausedPrecision = 0.002

    init(client: BatonClient, source: DeviceTarget, target: DeviceTarget, options: HandoffOptions) {
        self.client = client
        self.sourceDevice = source
        self.targetDevice = target
        self.options = options
        deadline = started.addingTimeInterval(options.timeout.inSeconds)
    }

    /// Why the handoff stopped short.
    struct Stop: Error {
        let status: HandoffStatus
        let detail: String
        var deviceStatus: String? = nil
        /// Why, typed, when a device's failure is known; else what `status` stands for.
        var cause: FailureCause? = nil
    }

    func run() async -> HandoffReport {
        do {
            try await steps()
        } catch let stop as Stop {
            phase(nil)
            report.status = stop.status
            report.detail = stop.detail
            report.deviceStatus = stop.deviceStatus
            report.cause = stop.cause ?? stop.status.impliedCause
            await rollBack()
        } catch {
            phase(nil)
            report.status = .targetFailed
            report.detail = "\(error)"
            report.cause = .failed
            await rollBack()
        }
        source?.channel.close()
        target?.channel.close()
        report.latencyMs = Date().timeIntervalSince(started) * 1000
        return report
    }

    private func steps() async throws {
        try refuseSameDevice()
        let (sourceApp, targetApp) = try await findApps()
        phase("find")
        (source, target) = try await open(sourceApp, targetApp)
        phase("open")
        guard let source, let target else { return }
        let (state, position) = try await read(source, target)
        phase("read")
        var request = playRequest(state, position: position)
        // The source is measured while the target proves it plays (300 ms or so), once the
        // request to play has gone: its readings do not delay the target's start.
        async let measured = { [self] in
            if !state.paused { try? await Task.sleep(for: .milliseconds(Self.sampleDelayMs)) }
            return try await line(of: source, from: state, unavailable: .sourceUnavailable)
        }()
        do {
            _ = try await start(request, on: target)
        } catch let stop as Stop where stop.status == .mediaUnavailable {
            // A file only the source has: the source serves it to the target, which plays it
            // from there.
            guard let served = try await share(request, from: source) else { throw stop }
            request = served
            _ = try await start(request, on: target)
        }
        let sourceLine = try await measured.line
        phase("start")
        let targetLine = try await confirm(state: state, sourceLine: sourceLine, target: target)
        phase("confirm")
        try await switchOver(state, request: request, sourceLine: sourceLine, targetLine: targetLine, source: source, target: target)
        phase("switch")
    }

    /// A source and target that are one device (the same id, or the same route) are refused
    /// before anything is asked of either.
    private func refuseSameDevice() throws {
        let sourceID = sourceDevice.deviceID?.lowercased(), targetID = targetDevice.deviceID?.lowercased()
        let sameID = sourceID != nil && sourceID == targetID
        let sameRoute = sourceDevice.routes.first != nil && sourceDevice.routes.first == targetDevice.routes.first
        if sameID || sameRoute { throw sameDevice(sourceDevice.description) }
    }

    private func sameDevice(_ name: String) -> Stop {
        Stop(status: .sameDevice, detail: "the source and the target are the same device (\(name)): a device cannot be handed to itself")
    }

    // MARK: phases

    /// The player app on each device: the one named, else the first that answers
    /// `baton.playback`. Both devices describe themselves either way: two addresses of one
    /// device are refused here, before anything is touched.
    private func findApps() async throws -> (String, String) {
        async let sourceApps = playbackApp(on: sourceDevice, role: "source", unavailable: .sourceUnavailable)
        async let targetApps = playbackApp(on: targetDevice, role: "target", unavailable: .targetUnavailable)
        let (s, t) = await (sourceApps, targetApps)
        let (sourceInfo, sourceApp) = try s.get(), (targetInfo, targetApp) = try t.get()
        if sourceInfo.id.lowercased() == targetInfo.id.lowercased() { throw sameDevice(sourceInfo.name) }
        return (sourceApp, targetApp)
    }

    private func playbackApp(on device: DeviceTarget, role: String, unavailable: HandoffStatus) async -> Result<(DeviceInfo, String), Stop> {
        do {
            let (info, apps) = try await client.describe(device, timeout: try remaining()).get()
            if let app = options.app { return .success((info, app)) }
            guard let app = apps.first(where: { $0.services.contains(PlaybackCommand.service) }) else {
                return .failure(Stop(status: unavailable, detail: "the \(role), \(info.name), has no app that answers \(PlaybackCommand.service)"))
            }
            return .success((info, app.id))
        } catch let stop as Stop {
            return .failure(stop)
        } catch let error as BatonClientError where error.cause == .timedOut {
            return .failure(Stop(status: .timeout, detail: "the \(role) did not answer: \(error.detail)", cause: .timedOut))
        } catch let error as BatonClientError {
            let status = BatonClient.launchStatus(error.cause).rawValue
            return .failure(Stop(status: unavailable, detail: "the \(role): \(error)", deviceStatus: status, cause: error.cause))
        } catch {
            return .failure(Stop(status: unavailable, detail: "the \(role): \(error)", deviceStatus: LaunchStatus.remoteSystemUnavailable.rawValue, cause: .unreachable))
        }
    }

    private func open(_ sourceApp: String, _ targetApp: String) async throws -> (PlaybackPeer, PlaybackPeer) {
        let wait = try remaining()
        async let s = client.openServiceOutcome(PlaybackCommand.service, app: sourceApp, on: sourceDevice, timeout: wait).get()
        async let t = client.openServiceOutcome(PlaybackCommand.service, app: targetApp, on: targetDevice, timeout: wait).get()
        let (opened, targetOpened) = try await (s, t)
        // Keep whichever opened, so that run() closes it.
        source = opened.0.map { PlaybackPeer(role: "source", channel: $0) }
        target = targetOpened.0.map { PlaybackPeer(role: "target", channel: $0) }
        guard let source else { throw stop(opened.1, who: "the source's \(sourceApp)", otherwise: .sourceUnavailable) }
        guard let target else { throw stop(targetOpened.1, who: "the target's \(targetApp)", otherwise: .targetUnavailable) }
        return (source, target)
    }

    /// Both players' states, together: the source's is what to hand off; the target's tells
    /// its clock. The source's position is the one it will have when the request reaches the
    /// target.
    private func read(_ source: PlaybackPeer, _ target: PlaybackPeer) async throws -> (PlaybackState, position: (Date) -> Double) {
        let wait = try remaining()
        async let s = source.call(.state, timeout: wait)
        async let t = target.call(.state, timeout: wait)
        let (sourceAnswer, targetAnswer) = await (s, t)
        let state = try self.state(sourceAnswer, of: source, unavailable: .sourceUnavailable)
        let targetState = try self.state(targetAnswer, of: target, unavailable: .targetUnavailable)
        targetSeekLatency = targetState.seekLatency
        try checkCancelled()
        guard let uri = state.uri, let at = state.position else {
            throw Stop(status: .nothingPlaying, detail: "the source plays nothing")
        }
        report.uri = uri
        report.paused = state.paused
        try checkBusy(source: state, target: targetState)
        let readAt = source.local(state.at), rate = state.rate, paused = state.paused
        return (state, { date in paused ? at : at + date.timeIntervalSince(readAt) * rate })
    }

    /// A target that plays is not silenced unless ``HandoffOptions/busy`` says so (by
    /// default: when the source plays too).
    private func checkBusy(source: PlaybackState, target: PlaybackState) throws {
        guard target.isPlaying, (options.busy ?? (source.paused ? .refuse : .replace)) == .refuse else { return }
        let plays = "the target plays \(target.uri ?? "something")"
        let why = options.busy == .refuse
            ? "\(plays) (busy = refuse)"
            : "\(plays) and the source is paused: handing off would silence it (busy = replace does)"
        throw Stop(status: .targetBusy, detail: why)
    }

    /// The state a reply carries, its date teaching `peer`'s clock; a failure is `unavailable`.
    private func state(_ answer: PlaybackPeer.Answer, of peer: PlaybackPeer, unavailable: HandoffStatus) throws -> PlaybackState {
        switch answer {
        case .reply(let message, let sent, let received):
            guard let state = PlaybackState(message: message) else {
                throw Stop(status: unavailable, detail: "the \(peer.role)'s \(PlaybackCommand.service) answered something that is not a state")
            }
            peer.learn(at: state.at, sent: sent, received: received)
            return state
        case .failed(let failure):
            throw Stop(status: unavailable, detail: "the \(peer.role)'s player: \(failure)", cause: FailureCause(failure))
        case .unanswered(let reply):
            throw stop(RequestOutcome(reply.status, detail: reply.detail, cause: reply.cause), who: "the \(peer.role)", otherwise: unavailable)
        }
    }

    /// A request to `who` that got no answer but `outcome` (a Rome status, and why): `timeout`
    /// when it timed out, else `otherwise`, with the status and its cause underneath.
    private func stop<Status: CausedStatus>(_ outcome: RequestOutcome<Status>, who: String, otherwise: HandoffStatus) -> Stop {
        let (status, detail) = (outcome.status.rawValue, outcome.detail)
        if outcome.cause == .timedOut { return Stop(status: .timeout, detail: "\(who): \(detail)", cause: .timedOut) }
        return Stop(status: otherwise, detail: "\(who): \(status)\(detail.isEmpty ? "" : ": " + detail)", deviceStatus: status, cause: outcome.cause)
    }

    /// What the target is asked to play: the source's queue and entry, from where the source
    /// will be once the target starts, muted while it proves itself; paused where the source
    /// is paused.
    private func playRequest(_ state: PlaybackState, position: (Date) -> Double) -> PlaybackCommand.PlayRequest {
        let uri = state.uri ?? ""
        var queue = [uri], index = 0
        if let at = state.index, state.queue.indices.contains(at), state.queue[at] == uri {
            queue = state.queue
            index = at
        }
        let lead = (target?.transit ?? 0) + Self.startAllowance
        return PlaybackCommand.PlayRequest(
            queue: queue, index: index,
            position: max(0, state.paused ? position(Date()) : position(Date()) + lead),
            paused: state.paused, volume: options.volume == .copy ? state.volume : nil, muted: !state.paused)
    }

    /// The request with its entry served by the source over HTTP to the target (the target's
    /// address as we reach it, the source's as we do); nil when it cannot be (no address to
    /// serve to, a URL rather than a file, or the source refused: the handoff then fails as
    /// the target's refusal said).
    private func share(_ request: PlaybackCommand.PlayRequest, from source: PlaybackPeer) async throws -> PlaybackCommand.PlayRequest? {
        guard request.uri.hasPrefix("/") || request.uri.hasPrefix("file:"),
              let client = targetDevice.routes.lazy.compactMap(\.endpoint).first?.host,
              let host = sourceDevice.routes.lazy.compactMap(\.endpoint).first?.host else { return nil }
        let share = PlaybackCommand.share(.init(uri: request.uri, client: client, host: host))
        guard case .reply(let message, _, _) = await source.call(share, timeout: try remaining()), let url = message.string("url") else { return nil }
        report.servedURL = url
        var served = request
        served.queue = [url]
        served.index = 0
        return served
    }

    private func start(_ request: PlaybackCommand.PlayRequest, on target: PlaybackPeer) async throws -> PlaybackProof {
        let wait = try remaining()
        targetTouched = true
        switch await target.call(.play(request), timeout: wait) {
        case .reply(let message, _, _):
            guard let proof = PlaybackProof(message: message) else {
                throw Stop(status: .targetFailed, detail: "the target's \(PlaybackCommand.service) answered play with something that is not a proof")
            }
            try checkCancelled()
            targetSeekLatency = proof.seekLatency ?? targetSeekLatency
            return proof
        case .failed(.cannotOpen(let why)):
            // Refused before it played anything: whatever the target played before plays on.
            targetTouched = false
            throw Stop(status: .mediaUnavailable, detail: "the target cannot open \(request.uri): \(why)")
        case .failed(let failure):
            throw Stop(status: .targetFailed, detail: "the target did not play \(request.uri): \(failure)", cause: FailureCause(failure))
        case .unanswered(let reply):
            throw stop(RequestOutcome(reply.status, detail: reply.detail, cause: reply.cause), who: "the target", otherwise: .targetFailed)
        }
    }

    /// Measures the target against the source (both lines, at one instant) and, while it is
    /// further than the precision, seeks it: each seek aimed where the source will be when the
    /// seek lands, less how far the last landing was off (a playing player's seek latency; a
    /// paused mpv that played before lands up to its audio buffer early), and measured again
    /// once the player says it landed. Answers the target's last line; further than the
    /// tolerance after the last seek, the target failed.
    private func confirm(state: PlaybackState, sourceLine: PositionLine, target: PlaybackPeer) async throws -> PositionLine {
        var (line, now) = try await self.line(of: target, from: nil, unavailable: .targetFailed)
        var error = try offset(of: line, now, from: sourceLine, state: state)
        report.startErrorMs = error * 1000
        // A paused player lands as far off after a seek as after its start; a playing one's
        // start says nothing of its seeks.
        var bias = state.paused ? error : 0
        let precision = state.paused ? min(options.precision, Self.pausedPrecision) : options.precision
        while abs(error) > precision, report.seeks < options.maxSeeks {
            report.corrected = true
            report.seeks += 1
            let lead = state.paused ? 0 : target.transit + (targetSeekLatency ?? Self.seekAllowance)
            let aim = max(0, sourceLine.position(at: Date().addingTimeInterval(lead)) - bias)
            switch await target.call(.seek(aim), timeout: try remaining()) {
            case .reply(let message, let sent, let received):
                if let after = PlaybackState(message: message) { target.learn(at: after.at, sent: sent, received: received) }
            case .failed(let failure):
                throw Stop(status: .targetFailed, detail: "the target was \(String(format: "%.3f", error)) s off and would not seek: \(failure)", cause: FailureCause(failure))
            case .unanswered(let reply):
                throw stop(RequestOutcome(reply.status, detail: reply.detail, cause: reply.cause), who: "the target", otherwise: .targetFailed)
            }
            (line, now) = try await self.line(of: target, from: nil, unavailable: .targetFailed)
            error = try offset(of: line, now, from: sourceLine, state: state)
            bias += error
        }
        report.positionErrorMs = error * 1000
        guard abs(error) <= options.tolerance else {
            throw Stop(status: .targetFailed, detail: String(
                format: "the target started %.3f s from the source, and after %d corrective seek%@ it is %.3f s away",
                (report.startErrorMs ?? 0) / 1000, report.seeks, report.seeks == 1 ? "" : "s", error))
        }
        try checkCancelled()
        return line
    }

    /// The target's position minus the source's at one instant (the target's last reading);
    /// a target that does not play (or hold) as the source does failed.
    private func offset(of line: PositionLine, _ now: PlaybackState, from sourceLine: PositionLine, state: PlaybackState) throws -> Double {
        guard now.paused == state.paused, now.uri != nil else {
            throw Stop(status: .targetFailed, detail: "the target is \(now.uri == nil ? "playing nothing" : now.paused ? "not playing" : "not paused") after it was started")
        }
        return line.position - sourceLine.position(at: line.at)
    }

    /// Where `peer` is: a line through its readings (`first`, then more) on our clock, and its
    /// last state. A paused player is read once; a playing one for ``sampleLeast`` and two
    /// steps of its position, ``sampleMost`` at most.
    private func line(of peer: PlaybackPeer, from first: PlaybackState?, unavailable: HandoffStatus) async throws -> (line: PositionLine, state: PlaybackState) {
        var readings: [(position: Double, at: Date)] = []
        var last = first
        if let first, let position = first.position { readings.append((position, first.at)) }
        let started = Date()
        while true {
            if let last, last.paused || last.position == nil { break }
            let steps = readings.indices.dropFirst().filter { readings[$0].position != readings[$0 - 1].position }.count
            let elapsed = Date().timeIntervalSince(started)
            let most = max(Self.sampleMost, min(4 * (last?.positionGranularity ?? 0), 2))
            if readings.count >= 3, (steps >= 2 && elapsed >= Self.sampleLeast) || elapsed >= most { break }
            let state = try self.state(await peer.call(.state, timeout: try remaining()), of: peer, unavailable: unavailable)
            last = state
            if let position = state.position { readings.append((position, state.at)) }
        }
        guard let last, let line = PositionLine(readings: readings, rate: last.rate, paused: last.paused) else {
            throw Stop(status: unavailable, detail: "the \(peer.role)'s player says no position")
        }
        return (peer.local(line), last)
    }

    /// Unmutes the target and lets the source go in the same instant; the report's positions
    /// are both players' lines at the instant the source was let go.
    private func switchOver(
        _ state: PlaybackState, request: PlaybackCommand.PlayRequest, sourceLine: PositionLine, targetLine: PositionLine,
        source: PlaybackPeer, target: PlaybackPeer
    ) async throws {
        let wait = try remaining()
        let letGo: PlaybackCommand? = switch options.source {
        case .pause: state.paused ? nil : .pause
        case .stop: .stop
        case .keep: nil
        }
        async let targetAnswer = request.muted ? target.call(.mute(false), timeout: wait) : target.call(.state, timeout: wait)
        async let sourceAnswer: PlaybackPeer.Answer? = if let letGo { await source.call(letGo, timeout: wait) } else { nil }
        let (t, s) = await (targetAnswer, sourceAnswer)
        let targetState: PlaybackState
        do {
            targetState = try self.state(t, of: target, unavailable: .targetFailed)
        } catch {
            // Both may be silent now: the source takes back what it played.
            if letGo != nil { await restore(state, on: source) }
            throw error
        }
        let targetAt = target.local(targetState.at)
        guard let s else {
            // The source plays on (keep) or stays paused: both where they are now.
            measure(at: targetAt, sourceLine: sourceLine, targetLine: targetLine, overlap: nil)
            return
        }
        let sourceState: PlaybackState
        do {
            sourceState = try self.state(s, of: source, unavailable: .sourceStopFailed)
        } catch let stop as Stop {
            // The target plays: nothing is rolled back, the report says both play.
            targetTouched = false
            throw Stop(status: .sourceStopFailed, detail: "the target plays, but the source did not \(letGo == .stop ? "stop" : "pause"): \(stop.detail)", deviceStatus: stop.deviceStatus, cause: stop.cause)
        }
        // Both replies on one clock: how long both played (the target unmuted before the source paused).
        let sourceAt = source.local(sourceState.at)
        measure(at: sourceAt, sourceLine: sourceLine, targetLine: targetLine, overlap: state.paused ? nil : sourceAt.timeIntervalSince(targetAt) * 1000)
    }

    /// The positions at `instant`, from both players' lines. (Not from their replies at the
    /// switch: a player's reading as it pauses jumps by up to its audio buffer, tens of ms for
    /// mpv, and one reading lags by up to a step.)
    private func measure(at instant: Date, sourceLine: PositionLine, targetLine: PositionLine, overlap: Double?) {
        report.positionAtSource = sourceLine.position(at: instant)
        report.positionAtTarget = targetLine.position(at: instant)
        report.overlapMs = overlap
    }

    // MARK: undoing

    /// After a failure: the target is stopped if it was asked to play.
    private func rollBack() async {
        guard targetTouched, let target else { return }
        report.rolledBack = true
        _ = await target.call(.stop, timeout: .seconds(2))
    }

    /// The source plays again as it did, after it was let go and the target failed.
    private func restore(_ state: PlaybackState, on source: PlaybackPeer) async {
        guard !state.paused else { return }
        if options.source == .stop, let uri = state.uri {
            _ = await source.call(.play(.init(queue: [uri], position: state.position ?? 0)), timeout: .seconds(5))
        } else {
            _ = await source.call(.resume, timeout: .seconds(2))
        }
    }

    // MARK: time

    /// Ends the phase `name` (nil: the one a failure cut short, if any).
    private func phase(_ name: String?) {
        let names = ["find", "open", "read", "start", "confirm", "switch"]
        guard let name = name ?? names.dropFirst(report.phases.count).first else { return }
        let now = Date()
        report.phases.append((name, now.timeIntervalSince(phaseStarted) * 1000))
        phaseStarted = now
    }

    /// What is left of the deadline; `timeout` when nothing is, `cancelled` when the task is.
    private func remaining() throws -> TimeAmount {
        try checkCancelled()
        let left = deadline.timeIntervalSinceNow
        guard left > 0 else { throw Stop(status: .timeout, detail: "the handoff did not finish within its deadline") }
        return .nanoseconds(Int64(left * 1e9))
    }

    private func checkCancelled() throws {
        if Task.isCancelled { throw Stop(status: .cancelled, detail: "the handoff was cancelled") }
    }
}
