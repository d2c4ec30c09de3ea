// QoS 1 round trips through a real mosquitto: BatonMQTT's client beside paho-mqtt (python3)
// on the same broker in the same run. One round trip: publish to a topic the same client
// subscribes to, until both the PUBACK and the message itself are back. Prints p50/p90.
//
//   baton-mqtt-bench [--count N] [--port P]   (no --port: starts mosquitto on a free port)
import BatonMQTT
import Foundation
import Logging
import NIOCore
import NIOPosix

var count = 2000
var port: Int?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--count": count = Int(arguments.next() ?? "") ?? count
    case "--port": port = Int(arguments.next() ?? "")
    default:
        FileHandle.standardError.write(Data("usage: baton-mqtt-bench [--count N] [--port P]\n".utf8))
        exit(64)
    }
}

func freePort() throws -> Int {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    let channel = try ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).wait()
    defer { try? channel.close().wait() }
    return channel.localAddress!.port!
}

var broker: Process?
if port == nil {
    let chosen = try freePort()
    let config = FileManager.default.temporaryDirectory.appendingPathComponent("baton-mqtt-bench-\(getpid()).conf")
    try "listener \(chosen) 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n".write(to: config, atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
    process.arguments = ["-c", config.path]
    process.standardError = FileHandle.nullDevice
    try process.run()
    broker = process
    port = chosen
    Thread.sleep(forTimeInterval: 0.5)
}
defer { broker?.terminate() }

/// Drives the round trips on the client's loop: the next publish goes out when both halves
/// of the previous one are back.
final class RoundTrips: MQTTClientDelegate, @unchecked Sendable {
    let client: MQTTClient
    let total: Int
    var samples: [Double] = []
    var started = NIODeadline.now()
    var acked = false
    var received = false
    let done: EventLoopPromise<[Double]>
    let ready: EventLoopPromise<Void>

    init(client: MQTTClient, total: Int) {
        self.client = client
        self.total = total
        done = client.eventLoop.makePromise()
        ready = client.eventLoop.makePromise()
    }

    func mqttClient(_ client: MQTTClient, connectedWithSessionPresent sessionPresent: Bool) { ready.succeed() }

    func mqttClient(_ client: MQTTClient, received message: MQTTMessage) {
        received = true
        finishOne()
    }

    func next() {
        guard samples.count < total + 100 else { return done.succeed(Array(samples.dropFirst(100))) }
        acked = false
        received = false
        started = .now()
        var payload = ByteBufferAllocator().buffer(capacity: 64)
        payload.writeRepeatingByte(0x61, count: 64)
        client.publish(MQTTMessage(topic: "bench/rtt", payload: payload)).whenSuccess { _ in
            self.acked = true
            self.finishOne()
        }
    }

    private func finishOne() {
        guard acked, received else { return }
        samples.append(Double((NIODeadline.now() - started).nanoseconds) / 1_000_000)
        next()
    }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
var logger = Logger(label: "baton-mqtt-bench")
logger.logLevel = .warning
let client = MQTTClient(configuration: .init(host: "127.0.0.1", port: port!, clientID: "baton-bench"),
                        eventLoop: group.next(), logger: logger)
let driver = RoundTrips(client: client, total: count)
client.delegate = driver
client.start()
try driver.ready.futureResult.wait()
_ = try client.subscribe([MQTTSubscription(filter: "bench/rtt")]).wait()
client.eventLoop.execute { driver.next() }
let ours = try driver.done.futureResult.wait()
try client.stop().wait()

let paho = """
import sys, time, threading
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
port, total = int(sys.argv[1]), int(sys.argv[2])
state = {"acked": False, "got": False}
done = threading.Event(); ready = threading.Event(); samples = []
c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="paho-bench", protocol=mqtt.MQTTv5)
def finish():
    if state["acked"] and state["got"]:
        samples.append((time.perf_counter() - state["t"]) * 1000); send()
def send():
    if len(samples) >= total + 100: done.set(); return
    state.update(acked=False, got=False, t=time.perf_counter())
    c.publish("bench/rtt", b"a" * 64, qos=1)
def on_publish(client, userdata, mid, rc, props): state["acked"] = True; finish()
def on_message(client, userdata, msg): state["got"] = True; finish()
def on_subscribe(client, userdata, mid, codes, props): ready.set()
c.on_publish = on_publish; c.on_message = on_message; c.on_subscribe = on_subscribe
c.connect("127.0.0.1", port); c.loop_start(); c.subscribe("bench/rtt", qos=1)
ready.wait(10); send(); done.wait(120); c.loop_stop()
s = sorted(samples[100:]); print(s[len(s) // 2], s[int(len(s) * 0.9)])
"""
let python = Process()
// python3 from PATH: paho may be installed for a python3 other than /usr/bin's.
python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
python.arguments = ["python3", "-c", paho, "\(port!)", "\(count)"]
let pipe = Pipe()
python.standardOutput = pipe
try python.run()
python.waitUntilExit()
let pahoFigures = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    .split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }

func format(_ value: Double) -> String { String(format: "%.3f", value) }
print("mqtt qos1 round trip, \(count) samples, 64-byte payload, mosquitto on 127.0.0.1:\(port!)")
print("  BatonMQTT  p50 \(format(percentile(ours, 0.5))) ms  p90 \(format(percentile(ours, 0.9))) ms")
if pahoFigures.count == 2 {
    print("  paho-mqtt  p50 \(format(pahoFigures[0])) ms  p90 \(format(pahoFigures[1])) ms")
} else {
    print("  paho-mqtt  failed (python3 exit \(python.terminationStatus))")
}
