import BatonMQTT
import NIOCore
import Testing

/// Backoff and takeover-loop decisions, with the clock and the randomness pinned.
@Suite("MQTT reconnect state machine")
struct MQTTReconnectStateMachineTests {
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func started() -> MQTTReconnectStateMachine {
        var machine = MQTTReconnectStateMachine(base: .milliseconds(100), cap: .seconds(30))
        machine.start()
        return machine
    }

    @Test("full jitter: the ceiling doubles per attempt up to the cap, and a connection starts it over")
    func fullJitter() {
        var machine = started()
        var ceilings: [Int64] = []
        for _ in 0..<12 {
            _ = machine.lost(.transient, now: Self.t0) { ceilings.append($0); return $0 }
        }
        #expect(Array(ceilings.prefix(4)) == [100_000_000, 200_000_000, 400_000_000, 800_000_000])
        #expect(ceilings.last == 30_000_000_000)
        #expect(machine.lost(.transient, now: Self.t0) { _ in 0 } == .reconnect(after: .nanoseconds(0), reportTakeoverLoop: false))
        machine.connected()
        _ = machine.lost(.transient, now: Self.t0) { ceilings.append($0); return $0 }
        #expect(ceilings.last == 100_000_000)
    }

    @Test("a lasting refusal waits the cap")
    func refusal() {
        var machine = started()
        #expect(machine.lost(.refused, now: Self.t0) == .reconnect(after: .seconds(30), reportTakeoverLoop: false))
    }

    @Test("three takeovers within a minute are reported once and back off to the cap")
    func takeoverLoop() {
        var machine = started()
        #expect(machine.lost(.takenOver, now: Self.t0) { $0 } == .reconnect(after: .milliseconds(100), reportTakeoverLoop: false))
        machine.connected()
        // mosquitto 2.0.11 closes a session taken over without DISCONNECT 0x8E.
        #expect(machine.lost(.closedByBroker, now: Self.t0 + .seconds(10)) { $0 } == .reconnect(after: .milliseconds(100), reportTakeoverLoop: false))
        machine.connected()
        #expect(machine.lost(.takenOver, now: Self.t0 + .seconds(20)) == .reconnect(after: .seconds(30), reportTakeoverLoop: true))
        machine.connected()
        #expect(machine.lost(.takenOver, now: Self.t0 + .seconds(50)) == .reconnect(after: .seconds(30), reportTakeoverLoop: false))
    }

    @Test("takeovers more than a minute apart are not a loop")
    func spacedTakeovers() {
        var machine = started()
        for minute in 0..<5 {
            machine.connected()
            let action = machine.lost(.takenOver, now: Self.t0 + .seconds(Int64(minute) * 61)) { $0 }
            #expect(action == .reconnect(after: .milliseconds(100), reportTakeoverLoop: false))
        }
    }

    @Test("after stop nothing reconnects")
    func stopped() {
        var machine = started()
        machine.stop()
        #expect(machine.lost(.transient, now: Self.t0) == .none)
    }
}
