#!/usr/bin/env python3
"""Writes the seed corpora in Fuzz/Corpus/ (committed; run again only to change them).

Each seed is a small valid input of its harness, so that the fuzzer starts from inputs that
reach deep; mutations find the rest. No keys or certificates are stored: the device file and
revocation list harnesses put their own in where the seeds say @ACCOUNT@, @DEVICE@, @KEY@.
"""
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    folder = os.path.join(here, "Corpus", target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# --- protobuf ---------------------------------------------------------------------------
def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(n):
    return (n << 1) ^ (n >> 63)


def vfield(number, value):
    return varint(number << 3) + varint(value)


def lfield(number, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(number << 3 | 2) + varint(len(data)) + data


def dfield(number, value):
    return varint(number << 3 | 1) + struct.pack("<d", value)


def value(v):
    if isinstance(v, bool):
        return vfield(4, int(v))
    if isinstance(v, int):
        return vfield(2, zigzag(v))
    if isinstance(v, float):
        return dfield(3, v)
    if isinstance(v, str):
        return lfield(1, v)
    if isinstance(v, tuple):  # (kind, payload)
        kind, payload = v
        if kind == "date":
            return vfield(5, zigzag(payload))
        if kind == "uuid":
            return lfield(6, payload)
        if kind == "bytes":
            return lfield(7, payload)
    if isinstance(v, list):
        return lfield(8, b"".join(lfield(1, value(e)) for e in v))
    if isinstance(v, dict):
        return lfield(9, dictionary(v))
    raise TypeError(v)


def dictionary(d):
    return b"".join(lfield(1, lfield(1, k) + lfield(2, value(v))) for k, v in d.items())


messages = {
    "empty": {},
    "ping": {"Type": "ping", "TargetId": "8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f",
             "CreationDate": ("date", 1795000000123456), "position": 83.5, "n": -7},
    "kinds": {"s": "h\u00e9", "i": 9223372036854775807, "d": -0.0, "b": False,
              "u": ("uuid", bytes(range(16))), "raw": ("bytes", b"\x00\xc8"), "none": ("bytes", b"")},
    "nested": {"list": [1, 2, 3], "empty": [], "deep": {"a": [{"x": ""}], "t": [("date", 0)]}, "e": {}},
}
for name, m in messages.items():
    write("value", name, dictionary(m))
    write("lua", name, dictionary(m))

device = lfield(1, "8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f") + lfield(2, "Living Room TV") + lfield(3, "tv") + lfield(4, "linux")
app = lfield(1, "player") + lfield(3, "media") + lfield(4, "remote") + lfield(5, dictionary({"version": "2"})) + vfield(6, 1)
frames = {
    "hello": lfield(1, vfield(1, 1) + lfield(2, "abc") + vfield(4, 1 << 20)
                    + lfield(6, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")),
    "hello-ack": lfield(2, vfield(1, 1) + lfield(2, device) + vfield(3, 300) + lfield(4, "{}")),
    "describe": lfield(4, vfield(1, 7) + lfield(2, device) + lfield(3, app)),
    "launch": lfield(5, vfield(1, 7) + lfield(2, "media://x") + lfield(3, "player") + lfield(5, "a")
                     + lfield(6, dictionary(messages["ping"])) + vfield(7, 5000)),
    "open": lfield(7, vfield(1, 1) + vfield(2, 300) + lfield(3, "remote") + lfield(4, "player")),
    "service-request": lfield(9, vfield(1, 1) + vfield(2, 2) + lfield(3, dictionary(messages["kinds"])) + vfield(4, 100)),
    "service-response": lfield(10, vfield(1, 1) + vfield(2, 2) + vfield(3, 1) + lfield(4, dictionary(messages["nested"]))
                               + lfield(5, "ok")),
    "goodbye": lfield(14, vfield(1, 3) + lfield(2, "bye")),
    "join": lfield(15, vfield(1, 3) + lfield(2, bytes(7)) + lfield(3, "id") + lfield(4, "TV") + lfield(5, b"\x04" + bytes(64))),
    "ping": lfield(12, vfield(1, 1 << 40)),
}
# The frame harness reads its input as one frame and, after its first byte, as a stream.
for name, f in frames.items():
    write("frame", name, f)
write("frame", "stream", b"\x10" + varint(len(frames["ping"])) + frames["ping"] + varint(len(frames["open"])) + frames["open"]
      + varint(200) + frames["service-request"])


# --- DNS ----------------------------------------------------------------------------------
def name(text):
    out = b""
    for label in text.split("."):
        if label:
            out += bytes([len(label.encode())]) + label.encode()
    return out + b"\x00"


def record(owner, rtype, rdata, cls=0x8001, ttl=120):
    return owner + struct.pack(">HHIH", rtype, cls, ttl, len(rdata)) + rdata


def txt(pairs):
    return b"".join(bytes([len(p)]) + p for p in pairs)


instance = "Living Room TV"
txt_data = txt([b"id=8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f", b"kind=tv", b"platform=linux", b"v=1",
                b"acct=3f2a91c077de0b45", b"model=X1", b"mfr=Acme", b"flag"])
# Names compressed as a responder writes them: the service type at offset 12 + len(PTR owner).
header = struct.pack(">HHHHHH", 0, 0x8400, 0, 4, 0, 2)
service = name("_baton._tcp.local")
ptr_owner = service
offset_service = 12
instance_name = bytes([len(instance)]) + instance.encode() + b"\xc0" + bytes([offset_service])
ptr = record(ptr_owner, 12, instance_name, cls=1, ttl=4500)
offset_instance = 12 + len(ptr) - len(instance_name)
inst_ptr = b"\xc0" + bytes([offset_instance])
host = name("tv.local")
srv = record(inst_ptr, 33, struct.pack(">HHH", 0, 0, 4711) + host)
txt_record = record(inst_ptr, 16, txt_data, ttl=4500)
a = record(name("tv.local"), 1, bytes([192, 168, 1, 20]))
aaaa = record(name("tv.local"), 28, bytes([0xFE, 0x80] + [0] * 13 + [1]))
nsec = record(inst_ptr, 47, inst_ptr + bytes([0, 5, 0, 0, 0x80, 0, 0x40]))
write("dns", "response", header + ptr + srv + txt_record + a + aaaa + nsec)
query = struct.pack(">HHHHHH", 0, 0, 1, 1, 0, 0) + service + struct.pack(">HH", 12, 0x8001) + \
    record(b"\xc0\x0c", 12, instance_name, cls=1, ttl=4500)
write("dns", "query", query)
write("dns", "goodbye", struct.pack(">HHHHHH", 0, 0x8400, 0, 1, 0, 0) + record(service, 12, bytes([2]) + b"TV" + b"\xc0\x0c", ttl=0))

write("txt", "device", bytes([len(instance)]) + instance.encode() + txt_data)
write("txt", "minimal", b"\x02TV" + txt([b"id=abc"]))
write("txt", "odd", b"\x01x" + txt([b"ID=x", b"id=y", b"=bad", b"v=+7", b"kind=", b"acct", b""]))

# --- JSON ---------------------------------------------------------------------------------
write("json", "object", '{"a": [1, 2.5, -0, 1e300, "x\\u00e9\\ud83d\\ude00"], "b": {"c": null, "d": true, "d": false}}')
write("json", "numbers", '[0, -1, 9223372036854775807, 9223372036854775808, 1.5e-300, 0.1, 12345678901234567890e-10]')
write("json", "strings", '["\\"\\\\\\/\\b\\f\\n\\r\\t", "\u00e9\u4e2d", "", {"": []}]')
write("json", "jobs", '{"jobs": [{"key": "k1", "from": "kitchen", "to": "tv"}], "options": {"retry": 2}}')

# --- security ---------------------------------------------------------------------------------
payload = '{"account":"@ACCOUNT@","version":3,"revoked":[{"id":"8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f",' \
          '"serial":"0a1b2c","revoked":"2026-11-21T10:00:00Z"},{"id":"b","serial":"ff","revoked":"2026-11-21T10:00:00.250Z"}]}'
write("revocation", "payload", b"\x01" + payload.encode())
write("revocation", "empty", b"\x01" + b'{"account":"@ACCOUNT@","version":0,"revoked":[]}')
write("revocation", "outer", b"\x00" + b'{"list":"{\\"account\\":\\"00\\",\\"version\\":1,\\"revoked\\":[]}","signature":"MEUCIQ=="}\n')

bundle = '{\n  "format" : "baton-device-bundle",\n  "version" : 1,\n  "device_id" : "@ID@",\n  "name" : "Fuzz TV",\n' \
         '  "account_certificate" : "@ACCOUNT@",\n  "device_certificate" : "@DEVICE@",\n  "device_key" : "@KEY@"\n}\n'
write("devicefile", "bundle", bundle)
write("devicefile", "other-account", bundle.replace('"account_certificate" : "@ACCOUNT@"', '"account_certificate" : "@OTHER@"'))
write("devicefile", "newer", '{"format": "baton-device-bundle", "version": 2}')

write("invite", "code", b"\x00" + b"7K3Q-M2XD-9PQR-0ABC-DEFG-HJKM")
write("invite", "code-typed", b"\x00" + b"7k3q m2xd 9pqr oabc defg hjkl")
write("invite", "fingerprint", b"\x01" + b"3f2a91c077de0b45" * 4)
write("invite", "join-key-point", b"\x02\x04" + bytes.fromhex(
    "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
    "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5"))
write("invite", "traceparent", b"\x03" + b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
