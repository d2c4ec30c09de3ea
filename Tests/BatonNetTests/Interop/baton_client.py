#!/usr/bin/env python3
"""A Baton client written from Protocol/baton.proto and the README alone, as a user of another
language would write one: the classes come from `protoc --python_out`, TLS from Python's ssl
module, keys and certificates from the `cryptography` package. It talks to a real agent and
checks, step by step, that the agent does what the documentation says.

Every check prints one JSON object on a line of its own: {"check": NAME, "ok": true|false,
"detail": ...}. The first failed check ends the run with exit code 1; exit code 0 means every
check passed. Every read has a deadline (READ_TIMEOUT), so the client never hangs.

Needs Python 3.10 or later (3.13's ssl reads the peer's certificate chain publicly; 3.10 to
3.12 have the same call one level down), protobuf (the runtime of what protoc generated) and
cryptography 40 or later.

usage: baton_client.py --generated DIR --host HOST --port PORT --invite CODE --invite-typed CODE
       --launch-app APP --private-app APP --service NAME
"""

import argparse
import datetime
import hashlib
import json
import os
import socket
import ssl
import sys
import tempfile
import uuid

READ_TIMEOUT = 10.0


class CheckFailed(Exception):
    pass


def check(name, ok, detail=""):
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)}), flush=True)
    if not ok:
        raise CheckFailed(f"{name}: {detail}")


# ---------------------------------------------------------------------------------------------
# Framing: an unsigned varint length (1 ... max_frame_size), then one serialized Frame.

def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class Closed(Exception):
    """The agent closed the connection."""


class Connection:
    """One TLS connection to an agent, speaking frames."""

    def __init__(self, pb, host, port, certfile, keyfile):
        self.pb = pb
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        # TLS 1.3 only; no hostname check and no CA check by the library: certificates name
        # devices (urn:uuid:), not hosts, and the client checks the agent's chain itself.
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.load_cert_chain(certfile, keyfile)
        raw = socket.create_connection((host, port), timeout=READ_TIMEOUT)
        self.tls = context.wrap_socket(raw, server_hostname=None)
        self.tls.settimeout(READ_TIMEOUT)
        self.buffer = b""
        self.next_request_id = 1
        self.peer_max_frame_size = 1 << 20

    def chain(self):
        """The agent's certificate chain as it sent it, DER, leaf first."""
        if hasattr(self.tls, "get_unverified_chain"):  # Python 3.13 and later
            certificates = self.tls.get_unverified_chain()
        else:  # 3.10 to 3.12: the same call, not yet public
            certificates = self.tls._sslobj.get_unverified_chain()
        return [c if isinstance(c, (bytes, bytearray)) else c.public_bytes(ssl._ssl.ENCODING_DER)
                for c in certificates]

    def request_id(self):
        # One space across every kind of request on the connection.
        rid = self.next_request_id
        self.next_request_id += 1
        return rid

    def send_bytes(self, data):
        self.tls.sendall(data)

    def send(self, frame):
        payload = frame.SerializeToString()
        assert 1 <= len(payload) <= self.peer_max_frame_size, len(payload)
        self.send_bytes(varint(len(payload)) + payload)

    def _fill(self):
        try:
            chunk = self.tls.recv(65536)
        except (socket.timeout, TimeoutError):
            raise
        except OSError:  # reset, or TLS ended without close_notify: closed all the same
            chunk = b""
        if not chunk:
            raise Closed()
        self.buffer += chunk

    def read(self):
        """The next frame; raises Closed at the end of the stream, socket.timeout after READ_TIMEOUT."""
        while True:
            length, shift, used = 0, 0, 0
            complete = False
            for i, byte in enumerate(self.buffer[:10]):
                length |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    used = i + 1
                    complete = True
                    break
            if complete and len(self.buffer) >= used + length:
                payload = self.buffer[used:used + length]
                self.buffer = self.buffer[used + length:]
                frame = self.pb.Frame()
                frame.ParseFromString(payload)
                return frame
            self._fill()

    def expect(self, kind):
        """The next frame but Pings (answered with Pong, as keepalive asks); it must be `kind`."""
        while True:
            frame = self.read()
            body = frame.WhichOneof("body")
            if body == "ping":
                pong = self.pb.Frame()
                pong.pong.nonce = frame.ping.nonce
                self.send(pong)
                continue
            if body != kind:
                raise CheckFailed(f"expected {kind}, got {body}: {frame}")
            return getattr(frame, kind)

    def read_until_closed(self):
        """Every frame until the agent closes, and whether it closed within READ_TIMEOUT."""
        frames = []
        try:
            while True:
                frames.append(self.read())
        except Closed:
            return frames, True
        except (socket.timeout, TimeoutError):
            return frames, False

    def hello(self, device_id, device_name):
        frame = self.pb.Frame()
        frame.hello.protocol_version = 1
        frame.hello.device_id = device_id
        frame.hello.device_name = device_name
        frame.hello.max_frame_size = 0  # the default, 1 MiB
        self.send(frame)
        ack = self.expect("hello_ack")
        if ack.max_frame_size:
            self.peer_max_frame_size = ack.max_frame_size
        return ack

    def close(self):
        try:
            self.tls.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Values: a Dictionary is a list of entries; compare them as maps (member order means nothing).

def to_value(pb, v):
    value = pb.Value()
    if isinstance(v, bool):
        value.bool_value = v
    elif isinstance(v, int):
        value.int_value = v
    elif isinstance(v, float):
        value.double_value = v
    elif isinstance(v, str):
        value.string_value = v
    elif isinstance(v, uuid.UUID):
        value.uuid_value = v.bytes  # 16 bytes, in the order the text form writes them
    elif isinstance(v, bytes):
        value.bytes_value = v
    elif isinstance(v, datetime.datetime):
        delta = v - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        value.date_value = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    elif isinstance(v, list):
        value.array_value.SetInParent()
        for element in v:
            value.array_value.elements.append(to_value(pb, element))
    elif isinstance(v, dict):
        value.dictionary_value.CopyFrom(to_dictionary(pb, v))
    else:
        raise TypeError(type(v))
    return value


def to_dictionary(pb, d):
    dictionary = pb.Dictionary()
    for key, v in d.items():
        entry = dictionary.entries.add()
        entry.key = key
        entry.value.CopyFrom(to_value(pb, v))
    return dictionary


def from_value(value):
    kind = value.WhichOneof("kind")
    if kind == "array_value":
        return [from_value(e) for e in value.array_value.elements]
    if kind == "dictionary_value":
        return from_dictionary(value.dictionary_value)
    if kind == "uuid_value":
        return uuid.UUID(bytes=bytes(value.uuid_value))
    if kind == "date_value":
        return datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=value.date_value)
    if kind is None:
        raise CheckFailed("a Value with no kind set")
    return getattr(value, kind)


def from_dictionary(dictionary):
    out = {}
    for entry in dictionary.entries:
        if entry.key in out:
            raise CheckFailed(f"repeated key {entry.key!r}")
        out[entry.key] = from_value(entry.value)
    return out


# ---------------------------------------------------------------------------------------------
# Invite codes: 15 bytes (7 of secret, then the first 8 of the account's fingerprint), 120 bits
# most significant first, 24 characters of Crockford's base32, six groups of four with dashes.

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def parse_invite(text):
    values = []
    for ch in text.upper():
        if ch == "-" or ch.isspace():
            continue
        if ch == "O":
            ch = "0"
        elif ch in ("I", "L"):
            ch = "1"
        index = ALPHABET.find(ch)
        if index < 0:
            raise ValueError(f"not an invite code: {ch!r}")
        values.append(index)
    if len(values) != 24:
        raise ValueError(f"not an invite code: {len(values)} characters")
    number = 0
    for v in values:
        number = number << 5 | v
    data = number.to_bytes(15, "big")
    return data[:7], data[7:]


def format_invite(secret, prefix):
    number = int.from_bytes(secret + prefix, "big")
    characters = "".join(ALPHABET[(number >> (5 * (23 - i))) & 31] for i in range(24))
    return "-".join(characters[i:i + 4] for i in range(0, 24, 4))


# ---------------------------------------------------------------------------------------------
# Certificates

def device_id_of(certificate):
    from cryptography import x509
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    for uri in names.get_values_for_type(x509.UniformResourceIdentifier):
        if uri.lower().startswith("urn:uuid:"):
            return uri[len("urn:uuid:"):].lower()
    return None


def check_agent_chain(chain, account_prefix=None):
    """The agent's chain as ACCOUNTS says a client checks it: a leaf naming a device, and a CA
    that signed it; with `account_prefix`, the CA's fingerprint starts with it. Returns
    (device id, account fingerprint)."""
    from cryptography import x509
    check("the agent presents its device certificate and its account's CA", len(chain) >= 2, f"{len(chain)} certificates")
    leaf = x509.load_der_x509_certificate(chain[0])
    ca = x509.load_der_x509_certificate(chain[1])
    device_id = device_id_of(leaf)
    check("the agent's certificate names its device as urn:uuid:", device_id is not None and uuid.UUID(device_id), device_id)
    constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
    check("the chain's second certificate is a CA", constraints.ca)
    try:
        leaf.verify_directly_issued_by(ca)
        signed = True
    except Exception as error:  # noqa: BLE001 - any failure is the answer
        signed = error
    check("the account's CA signed the agent's certificate", signed is True, signed)
    fingerprint = hashlib.sha256(chain[1]).digest()
    if account_prefix is not None:
        check("the agent's account is the one the invite code names (before the secret is sent)",
              fingerprint.startswith(account_prefix), fingerprint.hex())
    return device_id, fingerprint


def make_identity(directory):
    """A P-256 key and a self-signed certificate naming a fresh device id as urn:uuid:, of no
    Baton account: the agent serves it as anonymous."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    device_id = str(uuid.uuid4())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "python client")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier("urn:uuid:" + device_id)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    keyfile = os.path.join(directory, "key.pem")
    certfile = os.path.join(directory, "certificate.pem")
    with open(keyfile, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    with open(certfile, "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return device_id, key, spki, certfile, keyfile


# ---------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser()
    for name in ("--generated", "--host", "--invite", "--invite-typed", "--launch-app", "--private-app", "--service"):
        parser.add_argument(name, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--broker-url", default="", help="the account's broker the JoinResponse should carry")
    args = parser.parse_args()

    sys.path.insert(0, args.generated)
    import baton_pb2 as pb
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    work = tempfile.mkdtemp(prefix="baton-python-client-")
    device_id, key, spki, certfile, keyfile = make_identity(work)
    print(json.dumps({"device_id": device_id}), flush=True)
    connect = lambda cert=certfile: Connection(pb, args.host, args.port, cert, keyfile)  # noqa: E731

    # --- TLS, Hello / HelloAck ---------------------------------------------------------------
    conn = connect()
    check("TLS 1.3", conn.tls.version() == "TLSv1.3", conn.tls.version())
    agent_id, agent_account = check_agent_chain(conn.chain())
    ack = conn.hello(device_id, "python client")
    check("HelloAck speaks protocol version 1", ack.protocol_version == 1, ack.protocol_version)
    check("HelloAck names the device the certificate names", ack.device.id.lower() == agent_id, f"{ack.device.id} / {agent_id}")
    check("an anonymous caller is sent no revocation list", ack.revocation_list == "", ack.revocation_list[:40])

    # --- Describe ----------------------------------------------------------------------------
    request = pb.Frame()
    request.describe_request.request_id = conn.request_id()
    conn.send(request)
    described = conn.expect("describe_response")
    check("DescribeResponse answers the request id", described.request_id == request.describe_request.request_id, described.request_id)
    check("DescribeResponse names the device", described.device.id == ack.device.id, described.device)
    apps = {app.id: app for app in described.apps}
    check("an anonymous caller sees only apps marked anonymous", list(apps) == [args.launch_app], list(apps))
    app = apps[args.launch_app]
    check("the app lists its service and schemes", args.service in app.services and len(app.schemes) > 0 and app.anonymous,
          f"{list(app.services)} {list(app.schemes)}")
    scheme = app.schemes[0]

    # --- Launch ------------------------------------------------------------------------------
    request = pb.Frame()
    launch = request.launch_request
    launch.request_id = conn.request_id()
    launch.uri = scheme + ":from-python"
    launch.app_id = args.launch_app
    launch.data.CopyFrom(to_dictionary(pb, {"position": 83.5, "title": "from python"}))
    conn.send(request)
    launched = conn.expect("launch_response")
    check("Launch of an anonymous app succeeds", launched.status == pb.LAUNCH_STATUS_SUCCESS and launched.request_id == launch.request_id,
          f"{pb.LaunchStatus.Name(launched.status)} {launched.detail}")
    request = pb.Frame()
    request.launch_request.request_id = conn.request_id()
    request.launch_request.uri = "private:x"
    request.launch_request.app_id = args.private_app
    conn.send(request)
    denied = conn.expect("launch_response")
    check("Launch of an app not marked anonymous is denied to an anonymous caller",
          denied.status == pb.LAUNCH_STATUS_DENIED_BY_REMOTE_SYSTEM, pb.LaunchStatus.Name(denied.status))

    # --- An app-service channel --------------------------------------------------------------
    channel = 1
    request = pb.Frame()
    request.open_service_request.request_id = conn.request_id()
    request.open_service_request.channel_id = channel
    request.open_service_request.service_name = args.service
    request.open_service_request.app_id = args.launch_app
    conn.send(request)
    opened = conn.expect("open_service_response")
    check("OpenService succeeds", opened.status == pb.OPEN_STATUS_SUCCESS, f"{pb.OpenStatus.Name(opened.status)} {opened.detail}")

    request.open_service_request.request_id = conn.request_id()
    conn.send(request)
    again = conn.expect("open_service_response")
    check("opening a channel id that is still open answers OPEN_STATUS_UNKNOWN with a detail",
          again.status == pb.OPEN_STATUS_UNKNOWN and again.detail != "" and again.request_id == request.open_service_request.request_id,
          f"{pb.OpenStatus.Name(again.status)} {again.detail}")

    message = {
        "string": "héllo, wörld ✓",
        "empty string": "",
        "int": -42,
        "int min": -(1 << 63),
        "int max": (1 << 63) - 1,
        "double": 83.5,
        "tiny double": 5e-324,
        "bool true": True,
        "bool false": False,
        "date": datetime.datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=datetime.timezone.utc),
        "date before 1970": datetime.datetime(1969, 7, 20, 20, 17, 40, tzinfo=datetime.timezone.utc),
        "uuid": uuid.UUID("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"),
        "bytes": bytes(range(256)),
        "empty bytes": b"",
        "array of strings": ["a", "b", "c"],
        "array of ints": [1, -2, 3],
        "array of doubles": [0.5, 1.5],
        "array of dictionaries": [{"n": 1}, {"n": 2}],
        "empty array": [],
        "dictionary": {"nested": {"deeper": True, "list": [uuid.UUID(int=1)]}},
        "empty dictionary": {},
    }
    kinds = set()

    def collect(value):
        kind = value.WhichOneof("kind")
        kinds.add(kind)
        if kind == "array_value":
            for e in value.array_value.elements:
                collect(e)
        elif kind == "dictionary_value":
            for e in value.dictionary_value.entries:
                collect(e.value)

    request = pb.Frame()
    service_request = request.service_request
    service_request.channel_id = channel
    service_request.request_id = conn.request_id()
    service_request.message.CopyFrom(to_dictionary(pb, message))
    for entry in service_request.message.entries:
        collect(entry.value)
    every_kind = {field.name for field in pb.Value.DESCRIPTOR.oneofs_by_name["kind"].fields}
    check("the request carries every kind of Value", kinds == every_kind, sorted(every_kind - kinds))
    conn.send(request)
    response = conn.expect("service_response")
    check("ServiceResponse answers the channel and request id",
          response.channel_id == channel and response.request_id == service_request.request_id, f"{response.channel_id} {response.request_id}")
    check("the echo service answers SUCCESS", response.status == pb.RESPONSE_STATUS_SUCCESS,
          f"{pb.ResponseStatus.Name(response.status)} {response.detail}")
    echoed = from_dictionary(response.message)
    differences = {k: (message.get(k), echoed.get(k)) for k in set(message) | set(echoed) if message.get(k) != echoed.get(k)}
    check("every value comes back as sent (compared as a map)", not differences, differences)

    ping = pb.Frame()
    ping.ping.nonce = 0xBA70
    conn.send(ping)
    pong = conn.expect("pong")
    check("Ping is answered with Pong and the same nonce", pong.nonce == 0xBA70, pong.nonce)

    close = pb.Frame()
    close.close_service.channel_id = channel
    close.close_service.status = pb.CLOSED_STATUS_COMPLETED
    conn.send(close)
    # CloseService is not answered: the next frame is the answer to the next request.
    request = pb.Frame()
    request.service_request.channel_id = channel
    request.service_request.request_id = conn.request_id()
    request.service_request.message.CopyFrom(to_dictionary(pb, {"after": "close"}))
    conn.send(request)
    closed = conn.expect("service_response")
    check("CloseService is not answered; a request on the closed channel gets APP_SERVICE_CONNECTION_CLOSED",
          closed.status == pb.RESPONSE_STATUS_APP_SERVICE_CONNECTION_CLOSED and closed.request_id == request.service_request.request_id,
          f"{pb.ResponseStatus.Name(closed.status)} {closed.detail}")
    conn.close()

    # --- Join with an invite code ------------------------------------------------------------
    secret, prefix = parse_invite(args.invite)
    check("the printed invite code is six groups of four of the alphabet", format_invite(secret, prefix) == args.invite, args.invite[:4])
    check("the code as a person may type it reads the same", parse_invite(args.invite_typed) == (secret, prefix))
    check("the code names the agent's account", agent_account.startswith(prefix), agent_account.hex())

    conn = connect()
    check_agent_chain(conn.chain(), account_prefix=prefix)
    conn.hello(device_id, "python client")
    request = pb.Frame()
    join = request.join_request
    join.request_id = conn.request_id()
    join.invite_secret = secret
    join.device_id = device_id
    join.device_name = "python client"
    join.public_key = spki
    conn.send(request)
    joined = conn.expect("join_response")
    check("JoinResponse is SUCCESS", joined.status == pb.JOIN_STATUS_SUCCESS, f"{pb.JoinStatus.Name(joined.status)} {joined.detail}")
    account_certificate = x509.load_der_x509_certificate(joined.account_certificate)
    device_certificate = x509.load_der_x509_certificate(joined.device_certificate)
    check("the account certificate is the agent's account's", hashlib.sha256(joined.account_certificate).digest() == agent_account)
    returned_spki = device_certificate.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    check("the device certificate is for this client's key", returned_spki == spki)
    check("the device certificate names this client's id", device_id_of(device_certificate) == device_id, device_id_of(device_certificate))
    try:
        device_certificate.verify_directly_issued_by(account_certificate)
        signed = True
    except Exception as error:  # noqa: BLE001 - any failure is the answer
        signed = error
    check("the account's CA signed the device certificate", signed is True, signed)
    check("JoinResponse carries the account's broker (broker_url; broker_ca empty: the account's CA)",
          joined.broker_url == args.broker_url and joined.broker_ca == "", f"{joined.broker_url!r} {joined.broker_ca[:40]!r}")
    conn.close()

    conn = connect()
    conn.hello(device_id, "python client")
    request = pb.Frame()
    request.join_request.CopyFrom(join)
    request.join_request.request_id = conn.request_id()
    conn.send(request)
    reused = conn.expect("join_response")
    check("the code works once", reused.status == pb.JOIN_STATUS_REFUSED, f"{pb.JoinStatus.Name(reused.status)} {reused.detail}")
    conn.close()

    # Now of the account: present [device certificate, account certificate].
    chainfile = os.path.join(work, "chain.pem")
    with open(chainfile, "wb") as f:
        f.write(device_certificate.public_bytes(serialization.Encoding.PEM) + account_certificate.public_bytes(serialization.Encoding.PEM))
    conn = connect(chainfile)
    conn.hello(device_id, "python client")
    request = pb.Frame()
    request.launch_request.request_id = conn.request_id()
    request.launch_request.uri = "private:joined"
    request.launch_request.app_id = args.private_app
    conn.send(request)
    member = conn.expect("launch_response")
    check("after joining, an app not marked anonymous launches", member.status == pb.LAUNCH_STATUS_SUCCESS,
          f"{pb.LaunchStatus.Name(member.status)} {member.detail}")
    conn.close()

    # --- Bad frames --------------------------------------------------------------------------
    for name, data in (("a length prefix of 11 bytes", b"\x80" * 10 + b"\x01"),
                       ("a payload that is not a Frame", varint(3) + b"\xff\xff\xff"),
                       ("a length of 0", b"\x00")):
        conn = connect()
        conn.hello(device_id, "python client")
        conn.send_bytes(data)
        frames, closed = conn.read_until_closed()
        goodbyes = [f.goodbye for f in frames if f.WhichOneof("body") == "goodbye"]
        check(f"{name}: Goodbye REASON_PROTOCOL_ERROR with a detail, then the agent closes",
              len(goodbyes) == 1 and goodbyes[0].reason == pb.Goodbye.REASON_PROTOCOL_ERROR and goodbyes[0].detail and closed,
              f"{[str(f) for f in frames]} closed={closed}")
        conn.close()

    print(json.dumps({"done": True}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except CheckFailed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
