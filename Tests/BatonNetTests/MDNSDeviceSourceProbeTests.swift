@testable import BatonClient
import BatonCore
import BatonDiscovery
import Logging
import NIOCore
import NIOEmbedded
import Testing

/// What a source tells its directory.
private final class Recorder: DeviceSourceDelegate {
    var seen: [String: RemoteDevice] = [:]
    var lost: [String] = []

    func source(_ source: any DeviceSource, sees device: RemoteDevice, as key: String) { seen[key] = device }
    func source(_ source: any DeviceSource, lost key: String) {
        seen[key] = nil
        lost.append(key)
    }
    func sourceEnumerated(_ source: any DeviceSource) {}
    func source(_ source: any DeviceSource, problem: String) {}
}

private struct Refused: Error {}

/// A service as the browser reports it: device `id` named `name` at `host`:`port`.
private func service(_ name: String, id: String, host: [UInt8], port: UInt16) -> MDNSService {
    MDNSService(
        instanceName: name, fullName: DNSName(labels: [Array(name.utf8)])!.appending(.batonService)!,
        hostName: "h.local.", port: port, addresses: [MDNSServiceAddress(bytes: host, interfaceIndex: 2)],
        txt: [DNSTXTEntry(key: "id", text: id)!], interfaceIndices: [2])
}

/// A source on an embedded loop, fed browser events by the test, whose probes succeed only
/// for the hosts in `answering`; every probe's host is counted.
private final class ProbedSource {
    let loop = EmbeddedEventLoop()
    let recorder = Recorder()
    var answering: Set<String> = []
    var probes: [String: Int] = [:]
    var held: [EventLoopPromise<Void>] = []
    var holding = false
    var source: MDNSDeviceSource!

    init() {
        source = MDNSDeviceSource(
            on: loop, liveness: .seconds(30),
            probe: { [unowned self] device in
                let host = device.endpoints.first?.host ?? "?"
                probes[host, default: 0] += 1
                if holding {
                    let promise = loop.makePromise(of: Void.self)
                    held.append(promise)
                    return promise.futureResult
                }
                return answering.contains(host) ? loop.makeSucceededVoidFuture() : loop.makeFailedFuture(Refused())
            }, logger: Logger(label: "test"))
        source.attach(recorder)
    }

    /// Liveness rounds every 10 s (`liveness / 3`) for `seconds`.
    func rounds(for seconds: Int) {
        for _ in 0..<(seconds / 10) {
            loop.advanceTime(by: .seconds(10))
            source.checkLiveness()
        }
    }

    var totalProbes: Int { probes.values.reduce(0, +) }
}

@Suite("mDNS device source: probes a stranger's advertisements cannot multiply")
struct MDNSDeviceSourceProbeTests {
    @Test func fifteenHundredFakesAtOneHostCostAFewProbesAndAreAllLost() {
        let test = ProbedSource()
        for number in 0..<1_500 {
            test.source.handle(.added(service("Fake \(number)", id: "fake-\(number)", host: [10, 77, 0, 66], port: UInt16(20_000 + number))))
        }
        #expect(test.recorder.seen.count == 1_500, "shown as mDNS says, until probed")
        test.rounds(for: 70)
        #expect(test.probes["10.77.0.66"] ?? 0 <= 8, "\(test.probes)")
        #expect(test.recorder.seen.isEmpty, "every fake lost")
        // Advertised again meanwhile: still ignored.
        test.source.handle(.updated(service("Fake 1", id: "fake-1", host: [10, 77, 0, 66], port: 20_001)))
        #expect(test.recorder.seen.isEmpty)

        // A real device elsewhere is seen and probed as usual.
        test.answering = ["10.77.0.1"]
        test.source.handle(.added(service("Living Room TV", id: "tv", host: [10, 77, 0, 1], port: 7000)))
        test.rounds(for: 30)
        #expect(test.recorder.seen["Living Room TV"]?.status == .available)
        #expect(test.probes["10.77.0.1"] == 3)
    }

    @Test func fakesAtManyHostsAreProbedAtMostThriceEachAndThirtyTwoTimesAMinute() {
        let test = ProbedSource()
        for number in 0..<500 {
            let host: [UInt8] = [10, 1, UInt8(number / 200), UInt8(number % 200)]
            test.source.handle(.added(service("Fake \(number)", id: "fake-\(number)", host: host, port: 7000)))
        }
        test.rounds(for: 60)
        #expect(test.totalProbes <= 32, "\(test.totalProbes) in the first minute")
        test.rounds(for: 600)
        #expect(test.probes.values.allSatisfy { $0 <= 3 }, "never more than three at one address")
        #expect(test.totalProbes <= 32 * 11)
    }

    @Test func aDeviceThatAnsweredOnceIsShownUnavailableNotLostWhenItStopsAnswering() {
        let test = ProbedSource()
        test.answering = ["10.77.0.1"]
        test.source.handle(.added(service("Living Room TV", id: "tv", host: [10, 77, 0, 1], port: 7000)))
        test.rounds(for: 10)
        test.answering = []
        test.rounds(for: 100)
        #expect(test.recorder.seen["Living Room TV"]?.status == .unavailable)
        #expect(test.recorder.lost.isEmpty)
        #expect(test.probes["10.77.0.1"] == 11, "probed every round, as before")
        test.answering = ["10.77.0.1"]
        test.rounds(for: 10)
        #expect(test.recorder.seen["Living Room TV"]?.status == .available)
    }

    @Test func aDeviceRestartedOnAnotherPortIsSeenAgainAfterItsOldEndpointWasGivenUpOn() {
        let test = ProbedSource()
        test.source.handle(.added(service("Phoenix", id: "phoenix", host: [10, 77, 0, 1], port: 7000)))
        test.rounds(for: 40)
        #expect(test.recorder.lost == ["Phoenix"])
        test.answering = ["10.77.0.1"]
        test.source.handle(.updated(service("Phoenix", id: "phoenix", host: [10, 77, 0, 1], port: 7001)))
        #expect(test.recorder.seen["Phoenix"] != nil)
        test.rounds(for: 10)
        #expect(test.recorder.seen["Phoenix"]?.status == .available)
    }

    @Test func probesRunAFewAtOnceAndOneAtATimePerHost() {
        let test = ProbedSource()
        test.holding = true
        for number in 0..<20 {
            test.source.handle(.added(service("A \(number)", id: "a-\(number)", host: [10, 77, 0, 1], port: UInt16(7000 + number))))
            test.source.handle(.added(service("B \(number)", id: "b-\(number)", host: [10, 77, 1, UInt8(number)], port: 7000)))
        }
        test.rounds(for: 10)
        #expect(test.held.count == 4)
        #expect(test.probes["10.77.0.1"] ?? 0 <= 1)
        test.rounds(for: 30)
        #expect(test.held.count == 4, "nothing more starts while four are under way")
        for promise in test.held { promise.succeed() }
        #expect(test.totalProbes == 8)
    }
}
