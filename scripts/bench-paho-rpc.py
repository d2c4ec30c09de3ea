#!/usr/bin/env python3
"""The baseline of the broker figures in scripts/bench: paho-mqtt's own request/response over
MQTT 5 (response topic + correlation data, QoS 1, TCP_NODELAY on) on the same
mosquitto, one request in flight. Prints one line: `p50_us p99_us count`.

    bench-paho-rpc.py HOST PORT [--count N] [--cafile F --certfile F --keyfile F]
"""
import argparse
import queue
import socket
import statistics
import threading
import time
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties


def client(args, name):
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"paho-bench-{name}-{uuid.uuid4().hex[:8]}",
                    protocol=mqtt.MQTTv5)
    if args.cafile:
        c.tls_set(ca_certs=args.cafile, certfile=args.certfile, keyfile=args.keyfile)
    connected = threading.Event()
    c.on_connect = lambda *a: connected.set()
    c.connect(args.host, args.port, clean_start=True)
    c.loop_start()
    if not connected.wait(10):
        raise SystemExit("paho could not connect to the broker")
    # Nagle's algorithm with delayed ACKs makes each QoS 1 round trip wait ~40 ms: paho leaves
    # it on, so the baseline turns it off as Baton does.
    c.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def main():
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--count", type=int, default=2000)
    p.add_argument("--cafile")
    p.add_argument("--certfile")
    p.add_argument("--keyfile")
    args = p.parse_args()
    tag = uuid.uuid4().hex[:8]
    request_topic, reply_topic = f"paho-bench/{tag}/req", f"paho-bench/{tag}/rep"

    server = client(args, "server")

    def on_request(c, userdata, msg):
        props = Properties(PacketTypes.PUBLISH)
        props.CorrelationData = msg.properties.CorrelationData
        c.publish(msg.properties.ResponseTopic, msg.payload, qos=1, properties=props)

    server.on_message = on_request
    subscribed = threading.Event()
    server.on_subscribe = lambda *a: subscribed.set()
    server.subscribe(request_topic, qos=1)
    subscribed.wait(10)

    answers = queue.Queue()
    caller = client(args, "client")
    caller.on_message = lambda c, u, msg: answers.put(msg.properties.CorrelationData)
    subscribed.clear()
    caller.on_subscribe = lambda *a: subscribed.set()
    caller.subscribe(reply_topic, qos=1)
    subscribed.wait(10)

    payload = b"x" * 64
    times = []
    for i in range(args.count + 100):
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = reply_topic
        props.CorrelationData = i.to_bytes(4, "big")
        start = time.perf_counter()
        caller.publish(request_topic, payload, qos=1, properties=props)
        while answers.get(timeout=10) != props.CorrelationData:
            pass
        if i >= 100:  # warm-up
            times.append(time.perf_counter() - start)
    times.sort()
    print(f"{statistics.median(times) * 1e6:.0f} {times[int(len(times) * 0.99)] * 1e6:.0f} {len(times)}")
    caller.loop_stop()
    server.loop_stop()


if __name__ == "__main__":
    main()
