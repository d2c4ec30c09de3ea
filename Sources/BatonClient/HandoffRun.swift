import BatonCore
import Foundation
import NIOCore

extension BatonClient {
    /// Moves what `source` plays to `target`, make-before-break: reads the source, starts the
    /// target where the source will be by then (muted while it proves it plays: loaded, and
    /// advancing at real speed), one corrective seek if it started elsewhere, and only then
    /// unmutes the target and pauses (or stops, or keeps) the source in the same instant. Any
    /// failure before that leaves the source playing as it was and the target stopped.
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

    /// Time the target is given to start after a play arrives (mpv takes 4–34 ms
    /// from loadfile to playing).
    static let startAllowance = 0.01
    /// Time a playing target loses to a seek (it holds still until it plays again).
    static let seekAllowance = 0.01

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
        let (sourceApp, targetApp) = try await findApps()
        phase("find")
        (source, target) = try await open(sourceApp, targetApp)
        phase("open")
        guard let source, let target else { return }
        let (state, position) = try await read(source, target)
        phase("read")
        let request = playRequest(state, position: position)
        let proof = try await start(request, on: target)
        phase("start")
        try await confirm(proof, state: state, sourcePosition: position, target: target)
        phase("confirm")
        try await switchOver(state, request: request, sourcePosition: position, source: source, target: target)
        phase("switch")
    }

    // MARK: phases

    /// The player app on each device: the one named, else the first that answers `baton.playback`.
    private func findApps() async throws -> (String, String) {
        if let app = options.app { return (app, app) }
        async let sourceApps = playbackApp(on: sourceDevice, role: "source", unavailable: .sourceUnavailable)
        async let targetApps = playbackApp(on: targetDevice, role: "target", unavailable: .targetUnavailable)
        let (s, t) = await (sourceApps, targetApps)
        return (try s.get(), try t.get())
    }

    private func playbackApp(on device: DeviceTarget, role: String, unavailable: HandoffStatus) async -> Result<String, Stop> {
        do {
            let (info, apps) = try await client.describe(device, timeout: try remaining()).get()
            guard let app = apps.first(where: { $0.services.contains(PlaybackCommand.service) }) else {
                return .failure(Stop(status: unavailable, detail: "the \(role), \(info.name), has no app that answers \(PlaybackCommand.service)"))
            }
            return .success(app.id)
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
        _ = try self.state(targetAnswer, of: target, unavailable: .targetUnavailable)
        try checkCancelled()
        guard let uri = state.uri, let at = state.position else {
            throw Stop(status: .nothingPlaying, detail: "the source plays nothing")
        }
        report.uri = uri
        report.paused = state.paused
        let readAt = source.local(state.at), rate = state.rate, paused = state.paused
        return (state, { date in paused ? at : at + date.timeIntervalSince(readAt) * rate })
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

    private func start(_ request: PlaybackCommand.PlayRequest, on target: PlaybackPeer) async throws -> PlaybackProof {
        let wait = try remaining()
        targetTouched = true
        switch await target.call(.play(request), timeout: wait) {
        case .reply(let message, _, _):
            guard let proof = PlaybackProof(message: message) else {
                throw Stop(status: .targetFailed, detail: "the target's \(PlaybackCommand.service) answered play with something that is not a proof")
            }
            try checkCancelled()
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

    /// Checks that the target plays where the source is (or holds where it is paused); one
    /// corrective seek when it started further than the tolerance away.
    private func confirm(
        _ proof: PlaybackProof, state: PlaybackState, sourcePosition: (Date) -> Double, target: PlaybackPeer
    ) async throws {
        let error = proof.position - sourcePosition(target.local(proof.at))
        report.startErrorMs = error * 1000
        report.positionErrorMs = error * 1000
        guard abs(error) > (state.paused ? 0.001 : options.precision) else { return }
        report.corrected = true
        let seek: PlaybackCommand = state.paused ? .seek(state.position ?? 0) : .seekBy(Self.seekAllowance - error)
        switch await target.call(seek, timeout: try remaining()) {
        case .reply(let message, _, _):
            guard let after = PlaybackState(message: message), let position = after.position else {
                throw Stop(status: .targetFailed, detail: "the target has no position after the corrective seek")
            }
            let left = position - sourcePosition(target.local(after.at))
            report.positionErrorMs = left * 1000
            guard abs(left) <= options.tolerance, after.paused == state.paused else {
                throw Stop(status: .targetFailed, detail: String(
                    format: "the target started %.3f s from the source, and after a corrective seek it is %.3f s away%@",
                    error, left, after.paused == state.paused ? "" : (after.paused ? " and not playing" : " and not paused")))
            }
        case .failed(let failure):
            throw Stop(status: .targetFailed, detail: "the target started \(String(format: "%.3f", error)) s off and would not seek: \(failure)", cause: FailureCause(failure))
        case .unanswered(let reply):
            throw stop(RequestOutcome(reply.status, detail: reply.detail, cause: reply.cause), who: "the target", otherwise: .targetFailed)
        }
        try checkCancelled()
    }

    /// Unmutes the target and lets the source go in the same instant, then measures the seam
    /// from both players' readings.
    private func switchOver(
        _ state: PlaybackState, request: PlaybackCommand.PlayRequest, sourcePosition: (Date) -> Double, source: PlaybackPeer,
        target: PlaybackPeer
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
        report.positionAtTarget = targetState.position
        guard let s else {
            // The source plays on (keep) or stays paused: the target is compared with where it is.
            if let position = targetState.position {
                measure(sourceAt: sourcePosition(target.local(targetState.at)), targetAt: position, overlap: nil)
            }
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
        guard let targetPosition = targetState.position else { return }
        // Both readings on one clock: where the target was when the source's was taken.
        let gap = source.local(sourceState.at).timeIntervalSince(target.local(targetState.at))
        let sourcePosition = sourceState.position ?? state.position ?? 0
        measure(sourceAt: sourcePosition, targetAt: targetPosition + (state.paused ? 0 : gap), overlap: state.paused ? nil : gap * 1000)
    }

    /// The positions at the switch, as the players read them. (The position error is not
    /// taken from these: a player's reading as it pauses jumps by up to its audio buffer,
    /// tens of ms for mpv, so the error is measured while both play, in ``confirm``.)
    private func measure(sourceAt: Double, targetAt: Double, overlap: Double?) {
        report.positionAtSource = sourceAt
        report.positionAtTarget = targetAt
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
