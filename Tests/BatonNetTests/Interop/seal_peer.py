#!/usr/bin/env python3
"""A sealed-session responder written from the protocol in SealHandshake's doc comment
(Sources/BatonSecurity/SealHandshake.swift), with python's cryptography alone, for
SealInteropTests: proof that the written protocol is enough to talk to Baton.

Usage: seal_peer.py DEVICE_KEY_PEM DEVICE_ID CHAIN_DER... ; then on stdin a hello (hex, one
line). It prints its reply and a sealed message (hex, one line each), reads one sealed message
(hex) and prints "KIND COUNTER PLAINTEXT". Trust is not judged here: only the protocol."""
import hashlib
import struct
import sys
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, x25519
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, n):
        if self.at + n > len(self.data):
            raise ValueError("truncated")
        self.at += n
        return self.data[self.at - n:self.at]

    def int(self, n):
        return int.from_bytes(self.take(n), "big")

    def short(self):
        return self.take(self.int(1))


def short(field):
    return bytes([len(field)]) + field


def read(message):
    r = Reader(message)
    if r.int(1) != 1:
        raise ValueError("version")
    m = {"kind": r.int(1), "session": r.take(16), "sender": r.short().decode(), "receiver": r.short().decode(),
         "timestamp": r.int(8), "expiry": r.int(4), "ephemeral": r.take(32)}
    if m["kind"] == 0xF1:
        m["hello_hash"] = r.take(32)
    m["chain"] = [r.take(r.int(2)) for _ in range(r.int(1))]
    m["body"] = message[:r.at]
    m["signature"] = r.short()
    if r.at != len(message):
        raise ValueError("bytes after the signature")
    return m


def main():
    key_path, device_id, *chain_paths = sys.argv[1:]
    with open(key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), None)
    chain = []
    for path in chain_paths:
        with open(path, "rb") as f:
            chain.append(f.read())

    hello = bytes.fromhex(sys.stdin.readline().strip())
    h = read(hello)
    assert h["kind"] == 0xF0 and h["receiver"] == device_id
    leaf = x509.load_der_x509_certificate(h["chain"][0])
    leaf.public_key().verify(h["signature"], b"baton seal v1 hello" + h["body"], ec.ECDSA(hashes.SHA256()))
    now = time.time()
    assert h["timestamp"] / 1000 <= now + 60 and now <= h["expiry"] and now <= h["timestamp"] / 1000 + 120

    ephemeral = x25519.X25519PrivateKey.generate()
    body = bytes([1, 0xF1]) + h["session"] + short(device_id.encode()) + short(h["sender"].encode())
    body += struct.pack(">QI", int(now * 1000), int(now) + 60) + ephemeral.public_key().public_bytes_raw()
    body += hashlib.sha256(hello).digest() + bytes([len(chain)])
    body += b"".join(struct.pack(">H", len(c)) + c for c in chain)
    reply = body + short(key.sign(b"baton seal v1 reply" + body, ec.ECDSA(hashes.SHA256())))

    secret = ephemeral.exchange(x25519.X25519PublicKey.from_public_bytes(h["ephemeral"]))
    salt = hashlib.sha256(hello + reply).digest()
    i2r, r2i = (HKDF(hashes.SHA256(), 32, salt, b"baton seal v1 " + d).derive(secret) for d in (b"i2r", b"r2i"))

    def associated(sender, receiver, header):
        return h["session"] + short(sender.encode()) + short(receiver.encode()) + header

    header = bytes([1, 5]) + struct.pack(">QI", 0, int(now) + 60)
    sealed = header + ChaCha20Poly1305(r2i).encrypt(struct.pack(">IQ", 2, 0), b"hello from python",
                                                    associated(device_id, h["sender"], header))
    print(reply.hex())
    print(sealed.hex(), flush=True)

    incoming = bytes.fromhex(sys.stdin.readline().strip())
    header = incoming[:14]
    counter, _ = struct.unpack(">QI", header[2:])
    plain = ChaCha20Poly1305(i2r).decrypt(struct.pack(">IQ", 1, counter), incoming[14:],
                                          associated(h["sender"], device_id, header))
    print(f"{header[1]} {counter} {plain.decode()}", flush=True)


main()
