#!/usr/bin/env python3
"""Discovery figures for scripts/bench: Baton's mDNS beside python-zeroconf, in one run.

Usage (as root, with the python3 that has zeroconf):
    bench-discovery.py BATON BATON_BENCH [--rounds N] [--fleet N] [-v]

--rounds: rounds of the single-agent figures (7); --fleet: how many agents and services the
fleet figures use (100); -v: every round's figures to stderr too.

Everything happens on a private link: two network namespaces made here, `A` (the devices) and
`B` (the watchers), joined by a veth pair, so that multicast really crosses between processes
and nobody else is on it. They are deleted afterwards, also on failure and Ctrl-C.

Watchers are long-lived helper processes fed commands on stdin (`start`, `stop`): Baton's is
`baton-bench discovery-watcher` (a DeviceDirectory, what `baton devices --watch` runs), and
zeroconf's is this script in `zc-watcher` mode (Zeroconf() and a ServiceBrowser for
_baton._tcp.local.). Both stamp each line with CLOCK_MONOTONIC, the clock every process here
shares, so that a figure is one helper's stamp minus another's or minus the moment this script
spawned or signalled a process. The same script, in `zc-registrar` mode, registers zeroconf
services in namespace A.
"""
import ctypes
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SERVICE = "_baton._tcp.local."
HERE = os.path.abspath(__file__)


# ---------------------------------------------------------------------------------------------
# Helper modes (run in a namespace, driven over stdin)

_print_lock = threading.Lock()


def emit(*words):
    with _print_lock:
        print(*words, flush=True)


def instance_label(name):
    return name[: -len("." + SERVICE)] if name.endswith("." + SERVICE) else name


def zc_watcher(once=False):
    """`start`: Zeroconf() and a ServiceBrowser; `stop`: close. With once, starts at once and
    runs until killed (the process-spawn baseline)."""
    from zeroconf import IPVersion, ServiceBrowser, ServiceListener, Zeroconf

    class Listener(ServiceListener):
        def add_service(self, zc, type_, name):
            emit("added", time.monotonic_ns(), "-", instance_label(name))

        def remove_service(self, zc, type_, name):
            emit("removed", time.monotonic_ns(), "-", instance_label(name))

        def update_service(self, zc, type_, name):
            pass

    zc = browser = None

    def start():
        nonlocal zc, browser
        emit("starting", time.monotonic_ns())
        zc = Zeroconf(ip_version=IPVersion.All)
        browser = ServiceBrowser(zc, SERVICE, Listener())

    if once:
        start()
        while True:
            time.sleep(3600)
    for line in sys.stdin:
        command = line.strip()
        if command == "start" and zc is None:
            start()
        elif command == "stop" and zc is not None:
            browser.cancel()
            zc.close()
            zc = browser = None
            emit("stopped", time.monotonic_ns())
        elif command == "quit":
            break
    if zc is not None:
        zc.close()


def zc_registrar(address):
    """Registers zeroconf services for _baton._tcp, with the TXT keys a Baton agent gives, so
    that Baton's watcher lists them as devices too. Commands: `register NAME`, `unregister
    NAME`, `register-many N PREFIX` (concurrently), `unregister-all`, `quit`."""
    import asyncio
    import socket

    from zeroconf import IPVersion, ServiceInfo, Zeroconf

    zc = Zeroconf(ip_version=IPVersion.All)
    infos = {}

    def info_for(name):
        return ServiceInfo(
            SERVICE, f"{name}.{SERVICE}", addresses=[socket.inet_aton(address)], port=7100,
            properties={"id": f"zc-{name}", "kind": "desktop", "platform": "linux", "v": "1"},
            server=f"{name}.local.")

    emit("ready", time.monotonic_ns())
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "register":
                info = infos[words[1]] = info_for(words[1])
                emit("registering", time.monotonic_ns(), "-", words[1])
                zc.register_service(info)
                emit("registered", time.monotonic_ns(), "-", words[1])
            elif words[0] == "unregister":
                info = infos.pop(words[1])
                emit("unregistering", time.monotonic_ns(), "-", words[1])
                zc.unregister_service(info)
                emit("unregistered", time.monotonic_ns(), "-", words[1])
            elif words[0] == "register-many":
                count, prefix = int(words[1]), words[2]
                batch = [info_for(f"{prefix}-{i:03d}") for i in range(count)]
                for info in batch:
                    infos[instance_label(info.name)] = info

                async def register_all():
                    # Each returns once probing is over; the announcements go on by themselves.
                    await asyncio.gather(*(zc.async_register_service(info) for info in batch))

                emit("registering", time.monotonic_ns(), "-", prefix)
                asyncio.run_coroutine_threadsafe(register_all(), zc.loop).result(60)
                emit("registered", time.monotonic_ns(), "-", prefix)
            elif words[0] == "unregister-all":
                zc.unregister_all_services()
                infos.clear()
                emit("unregistered", time.monotonic_ns(), "-", "all")
            elif words[0] == "quit":
                break
        except Exception as error:  # reported to the driver, which fails with it
            emit("error", time.monotonic_ns(), repr(error))
    zc.close()


# ---------------------------------------------------------------------------------------------
# The driver

class BenchFailure(Exception):
    pass


CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def run(*argv):
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchFailure(f"{' '.join(argv)} exited with {result.returncode}: {result.stderr.strip()}")
    return result.stdout


class Network:
    """Namespaces `a` (10.78.0.1 on v0) and `b` (10.78.0.2 on v1) joined by a veth pair, each
    with IPv6 link-local addresses usable at once (no duplicate address detection)."""

    def __init__(self):
        prefix = f"baton-bench-{os.getpid()}-{random.randrange(1 << 16):04x}"
        self.a, self.b = prefix + "-a", prefix + "-b"
        self.made = []
        # This thread's own namespace, to come back to after spawning in another.
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)

    def create(self):
        for ns in (self.a, self.b):
            run("ip", "netns", "add", ns)
            self.made.append(ns)
            run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0",
                "net.ipv6.conf.default.accept_dad=0")
            run("ip", "-n", ns, "link", "set", "lo", "up")
        run("ip", "link", "add", "v0", "netns", self.a, "type", "veth", "peer", "name", "v1", "netns", self.b)
        run("ip", "-n", self.a, "addr", "add", "10.78.0.1/24", "dev", "v0")
        run("ip", "-n", self.b, "addr", "add", "10.78.0.2/24", "dev", "v1")
        for ns, dev in ((self.a, "v0"), (self.b, "v1")):
            run("ip", "-n", ns, "link", "set", dev, "up")
        for ns, dev in ((self.a, "v0"), (self.b, "v1")):
            deadline = time.monotonic() + 5
            while True:
                state = run("ip", "-n", ns, "-o", "link", "show", dev)
                if "LOWER_UP" in state and "state UP" in state:
                    break
                if time.monotonic() > deadline:
                    raise BenchFailure(f"{dev} in {ns} has no carrier after 5 s")
                time.sleep(0.01)

    def remove(self):
        for ns in self.made:
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        self.made = []

    def enter(self, ns):
        """Moves this thread into `ns` (None: back home); processes spawned now start there."""
        fd = self.home if ns is None else os.open(f"/var/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                error = ctypes.get_errno()
                raise BenchFailure(f"setns {ns or 'home'}: {os.strerror(error)}")
        finally:
            if ns is not None:
                os.close(fd)


class Child:
    """A process spawned in a namespace whose stdout lines are collected, with arrival times,
    by a thread; stderr goes to a log file shown when something goes wrong."""

    def __init__(self, what, argv, network, ns, log_dir, env=None, stdin=False):
        self.what = what
        self.log_path = os.path.join(log_dir, f"{what}.log".replace(" ", "_").replace("/", "_"))
        self.log = open(self.log_path, "w")
        self.lines = queue.Queue()
        self.seen = []  # every line, for failure messages
        network.enter(ns)
        try:
            self.spawned = time.monotonic_ns()
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=self.log, env=env, text=True, bufsize=1,
                # Its own session: Ctrl-C reaches the driver only, which stops everyone.
                start_new_session=True)
        finally:
            network.enter(None)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put((time.monotonic_ns(), line.rstrip("\n")))
        self.lines.put((time.monotonic_ns(), None))

    def send(self, command):
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as error:
            raise BenchFailure(f"{self.what}: cannot send {command!r}: {error}{self.tail()}")

    def tail(self):
        self.log.flush()
        try:
            with open(self.log_path) as f:
                err = f.read()[-1500:]
        except OSError:
            err = ""
        out = "\n".join(self.seen[-8:])
        return (f"\n  last output of {self.what}:\n    " + out.replace("\n", "\n    ") if out else "") + (
            f"\n  its stderr:\n    " + err.strip().replace("\n", "\n    ") if err.strip() else "")

    def expect(self, matches, timeout, waiting_for):
        """The first line `matches` accepts, as (arrival ns, line); fails after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchFailure(f"{self.what}: no {waiting_for} within {timeout:g} s{self.tail()}")
            try:
                arrived, line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait()
                raise BenchFailure(
                    f"{self.what} exited ({self.proc.returncode}) while waiting for {waiting_for}{self.tail()}")
            self.seen.append(line)
            if line.startswith("error "):
                raise BenchFailure(f"{self.what}: {line}{self.tail()}")
            if matches(line):
                return arrived, line

    def event(self, kind, name, timeout, waiting_for=None):
        """The helper's stamp on its `kind` line (added, removed...) for instance `name`."""
        def matches(line):
            words = line.split(" ", 3)
            return words[0] == kind and (name is None or (len(words) == 4 and words[3] == name))
        _, line = self.expect(matches, timeout, waiting_for or f"'{kind} {name or ''}'")
        return int(line.split(" ")[1])

    def drain(self):
        """Forgets the lines that came so far."""
        while True:
            try:
                self.lines.get_nowait()
            except queue.Empty:
                return

    def signal(self, signo):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signo)

    def stop(self, timeout=5):
        """SIGTERM, then SIGKILL if still there after `timeout` s. Whether it went on SIGTERM."""
        clean = True
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                clean = False
                self.signal(signal.SIGKILL)
                self.proc.wait()
        if self.proc.stdin:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        self.log.close()
        return clean


def is_added_json(line, name):
    """Whether `line` is `baton devices --watch --json`'s added event for `name`."""
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return event.get("event") == "added" and event.get("device", {}).get("name") == name


def ms(ns):
    return ns / 1e6


def median(values):
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def fmt_ms(x):
    return f"{x:.0f} ms" if x >= 100 else f"{x:.1f} ms"


def row(what, figure, baseline, target, ok):
    mark = "" if ok is None else ("ok" if ok else "MISSED")
    print(what.ljust(46) + figure.ljust(12) + baseline.ljust(40) + target.ljust(12) + mark, flush=True)


class Bench:
    def __init__(self, baton, baton_bench, rounds, fleet, verbose):
        self.baton, self.baton_bench, self.verbose = baton, baton_bench, verbose
        self.rounds, self.fleet = rounds, fleet
        self.network = Network()
        self.children = []
        self.log_dir = tempfile.mkdtemp(prefix="baton-bench-discovery-")
        self.agent_number = 0
        self.last_watcher_start = 0.0

    def spawn(self, what, argv, ns, env=None, stdin=False):
        child = Child(what, argv, self.network, ns, self.log_dir, env=env, stdin=stdin)
        self.children.append(child)
        return child

    def agent(self, name):
        """A `baton agent` in namespace A named `name`, with a device id of its own."""
        self.agent_number += 1
        home = os.path.join(self.log_dir, f"agent-{self.agent_number}")
        os.makedirs(home)
        env = dict(os.environ, XDG_CONFIG_HOME=home)
        return self.spawn(
            f"agent {name}", [self.baton, "agent", "--listen", "0.0.0.0:0", "--name", name, "--kind", "desktop", "-q"],
            self.network.a, env=env)

    def stop_child(self, child):
        clean = child.stop()
        if child in self.children:
            self.children.remove(child)
        if not clean:
            raise BenchFailure(f"{child.what} did not stop on SIGTERM within 5 s{child.tail()}")

    def cleanup(self):
        for child in self.children:
            try:
                child.stop(timeout=3)
            except Exception:
                pass
        self.children = []
        self.network.remove()

    # -- helpers ------------------------------------------------------------------------------

    def baton_watcher(self, what):
        return self.spawn(what, [self.baton_bench, "discovery-watcher"], self.network.b, stdin=True)

    def zc_watcher(self, what):
        return self.spawn(what, [sys.executable, HERE, "zc-watcher"], self.network.b, stdin=True)

    def start_watcher(self, watcher):
        # RFC 6762 §6: a responder multicasts a record at most once a second on a link (zeroconf
        # keeps to it), so a watcher started within a second of another may only hear answers to
        # its second query. Each start here is on a link quiet for over a second.
        time.sleep(max(0.0, self.last_watcher_start + 1.2 - time.monotonic()))
        self.last_watcher_start = time.monotonic()
        watcher.drain()
        watcher.send("start")
        return watcher.event("starting", None, 10)

    @staticmethod
    def stop_watcher(watcher):
        watcher.send("stop")
        watcher.event("stopped", None, 10)

    # -- the figures --------------------------------------------------------------------------

    def wait_all(self, watcher, kind, names, since, timeout):
        """Waits until `watcher` has said `kind` (added, removed) of every one of `names`; the
        time from `since` to the last, in ns."""
        pending, last = set(names), since
        deadline = time.monotonic() + timeout
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchFailure(f"{watcher.what}: {len(pending)} of {len(names)} not {kind} within {timeout:g} s, "
                                   f"e.g. {sorted(pending)[:3]}{watcher.tail()}")
            _, line = watcher.expect(lambda l: l.startswith(kind + " "), left, kind)
            words = line.split(" ", 3)
            if words[3] in pending:
                pending.discard(words[3])
                last = int(words[1])
        return last - since

    def watch_until_all(self, watcher, names, timeout):
        """Starts `watcher`, waits until it has added every one of `names` and stops it: the
        time from its start to the last, in ns."""
        started = self.start_watcher(watcher)
        took = self.wait_all(watcher, "added", names, started, timeout)
        self.stop_watcher(watcher)
        return took

    def run(self):
        self.network.create()
        # Long-lived watchers, browsing throughout: they see agents and services come and go.
        self.baton_live = self.baton_watcher("Baton watcher (live)")
        self.zc_live = self.zc_watcher("zeroconf watcher (live)")
        # Watchers started afresh for each "watcher start" figure.
        self.baton_fresh = self.baton_watcher("Baton watcher (fresh)")
        self.zc_fresh = self.zc_watcher("zeroconf watcher (fresh)")
        self.registrar = self.spawn("zeroconf registrar", [sys.executable, HERE, "zc-registrar", "10.78.0.1"],
                                    self.network.a, stdin=True)
        self.registrar.event("ready", None, 30)
        for watcher in (self.baton_live, self.zc_live):
            self.start_watcher(watcher)
        self.baton_live.event("enumerated", None, 10)

        print(f"Discovery over mDNS: a private veth link between two network namespaces, devices on one "
              f"side, watchers on the other;\neach figure beside python-zeroconf {zeroconf_version()} from this "
              f"run, p50 of {self.rounds} rounds\n(the {self.fleet}-device figures: p50 of 3 rounds, "
              f"and once for starting or stopping them all)")
        print("-" * 118)
        row("what", "figure", "baseline (same run)", "target", None)
        print("-" * 118)
        self.run_rounds()
        self.run_fleet()
        self.run_names()
        print("-" * 118)
        print("Baton's watcher is a DeviceDirectory, what `baton devices --watch` runs; zeroconf's is Zeroconf() and a\n"
              "ServiceBrowser for _baton._tcp. \"other stack\" rows swap the watchers: a Baton agent seen by zeroconf, a\n"
              "zeroconf service seen by Baton. Baton's watcher reports a goodbye 1 s after it (RFC 6762 §10.1 asks for\n"
              "that); zeroconf's at once.")

    def run_rounds(self):
        baton_live, zc_live, baton_fresh, zc_fresh = self.baton_live, self.zc_live, self.baton_fresh, self.zc_fresh
        registrar = self.registrar
        f = {k: [] for k in ("agent_added", "agent_added_zc", "fresh_baton", "fresh_zc", "cli", "py_spawn",
                             "agent_removed", "agent_removed_zc", "zc_added", "zc_added_baton",
                             "zc_removed", "zc_removed_baton")}
        for i in range(self.rounds):
            name = f"bench-{i}"
            # Agent start → added.
            agent = self.agent(name)
            added = baton_live.event("added", name, 10)
            f["agent_added"].append(added - agent.spawned)
            f["agent_added_zc"].append(zc_live.event("added", name, 10) - agent.spawned)
            agent.expect(lambda l: l.startswith("listening on "), 5, "its 'listening on' line")
            # Past its announcements (the second comes a second after the first), so that
            # fresh watchers find it by asking.
            time.sleep(max(0.0, (added / 1e9 + 1.5) - time.monotonic()))

            # Watcher start → added, for an agent already running; who goes first alternates.
            for watcher in ((baton_fresh, zc_fresh) if i % 2 == 0 else (zc_fresh, baton_fresh)):
                started = self.start_watcher(watcher)
                seen = watcher.event("added", name, 10)
                (f["fresh_baton"] if watcher is baton_fresh else f["fresh_zc"]).append(seen - started)
                self.stop_watcher(watcher)

            # The same from a process spawn: `baton devices --watch --json`, and python3 with
            # zeroconf; both by the arrival of their line here.
            time.sleep(max(0.0, self.last_watcher_start + 1.2 - time.monotonic()))
            # Every account: each bench agent made an account of its own.
            cli = self.spawn("baton devices --watch", [self.baton, "devices", "--watch", "--json",
                                                       "--authorization", "anonymous", "--liveness", "1h"],
                             self.network.b)
            arrived, _ = cli.expect(lambda l: is_added_json(l, name), 10, f"added {name}")
            f["cli"].append(arrived - cli.spawned)
            self.stop_child(cli)
            time.sleep(1.2)
            py = self.spawn("python3 zeroconf browse", [sys.executable, HERE, "zc-watcher-once"], self.network.b)
            arrived, _ = py.expect(lambda l: l.startswith("added ") and l.endswith(" " + name), 10, f"added {name}")
            f["py_spawn"].append(arrived - py.spawned)
            self.stop_child(py)
            self.last_watcher_start = time.monotonic()

            # Clean stop → removed.
            baton_live.drain()
            zc_live.drain()
            stopped = time.monotonic_ns()
            self.stop_child(agent)
            f["agent_removed"].append(baton_live.event("removed", name, 10) - stopped)
            f["agent_removed_zc"].append(zc_live.event("removed", name, 10) - stopped)

            # The same with zeroconf as the responder.
            zname = f"zc-{i}"
            registrar.send(f"register {zname}")
            registering = registrar.event("registering", zname, 10)
            f["zc_added"].append(zc_live.event("added", zname, 10) - registering)
            f["zc_added_baton"].append(baton_live.event("added", zname, 10) - registering)
            registrar.event("registered", zname, 10)
            time.sleep(1.5)
            baton_live.drain()
            zc_live.drain()
            registrar.send(f"unregister {zname}")
            unregistering = registrar.event("unregistering", zname, 10)
            f["zc_removed"].append(zc_live.event("removed", zname, 10) - unregistering)
            f["zc_removed_baton"].append(baton_live.event("removed", zname, 10) - unregistering)
            registrar.event("unregistered", zname, 10)

        p = {k: ms(median(v)) for k, v in f.items()}
        row("watcher start → added (process running)", fmt_ms(p["fresh_baton"]),
            f"Zeroconf()+ServiceBrowser {fmt_ms(p['fresh_zc'])}", "≤ 150 ms", p["fresh_baton"] <= 150)
        row("watcher start → added (process spawn)", fmt_ms(p["cli"]),
            f"python3+zeroconf {fmt_ms(p['py_spawn'])}", "", None)
        row("agent start → added (process spawn)", fmt_ms(p["agent_added"]),
            f"zeroconf register_service {fmt_ms(p['zc_added'])}", "≤ 1.2 s", p["agent_added"] <= 1200)
        row("  seen by the other stack's watcher", fmt_ms(p["agent_added_zc"]),
            f"zeroconf register_service {fmt_ms(p['zc_added_baton'])}", "", None)
        row("clean stop → removed (SIGTERM)", fmt_ms(p["agent_removed"]),
            f"zeroconf unregister_service {fmt_ms(p['zc_removed'])}", "≤ 1.5 s", p["agent_removed"] <= 1500)
        row("  seen by the other stack's watcher", fmt_ms(p["agent_removed_zc"]),
            f"zeroconf unregister_service {fmt_ms(p['zc_removed_baton'])}", "", None)
        if self.verbose:
            for k, v in f.items():
                print(f"  {k}: " + " ".join(f"{ms(x):.0f}" for x in v), file=sys.stderr)

    def run_fleet(self):
        baton_live, zc_live, baton_fresh, zc_fresh = self.baton_live, self.zc_live, self.baton_fresh, self.zc_fresh
        registrar = self.registrar
        n, fresh_rounds = self.fleet, 3
        names = [f"fleet-{i:03d}" for i in range(n)]
        baton_live.drain()
        first = time.monotonic_ns()
        agents = [self.agent(name) for name in names]
        for agent in agents:
            agent.expect(lambda l: l.startswith("listening on "), 60, "its 'listening on' line")
        spawn_all = self.wait_all(baton_live, "added", names, first, 60)
        rss = 0
        for agent in agents:
            try:
                with open(f"/proc/{agent.proc.pid}/status") as status:
                    rss += next(int(l.split()[1]) for l in status if l.startswith("VmRSS:"))
            except (OSError, StopIteration):
                pass
        time.sleep(3)  # past every announcement
        fresh, fresh_zc = [], []
        for _ in range(fresh_rounds):
            fresh.append(self.watch_until_all(baton_fresh, names, 30))
            fresh_zc.append(self.watch_until_all(zc_fresh, names, 30))
        baton_live.drain()
        stopping = time.monotonic_ns()
        for agent in agents:
            agent.signal(signal.SIGTERM)
        stop_all = self.wait_all(baton_live, "removed", names, stopping, 30)
        for agent in agents:
            self.stop_child(agent)

        # The baseline: as many services in one zeroconf process.
        zc_names = [f"zfleet-{i:03d}" for i in range(n)]
        zc_live.drain()
        registrar.send(f"register-many {n} zfleet")
        registering = registrar.event("registering", "zfleet", 10)
        zc_register_all = self.wait_all(zc_live, "added", zc_names, registering, 60)
        registrar.event("registered", "zfleet", 60)
        time.sleep(3)
        zc_fresh_zc, zc_fresh_baton = [], []
        for _ in range(fresh_rounds):
            zc_fresh_zc.append(self.watch_until_all(zc_fresh, zc_names, 30))
            zc_fresh_baton.append(self.watch_until_all(baton_fresh, zc_names, 30))
        zc_live.drain()
        registrar.send("unregister-all")
        unregistering = time.monotonic_ns()
        zc_unregister_all = self.wait_all(zc_live, "removed", zc_names, unregistering, 30)
        registrar.event("unregistered", "all", 30)

        p = lambda values: ms(median(values))
        row(f"{n} agents: watcher start → all added", fmt_ms(p(fresh)),
            f"zeroconf, {n} services {fmt_ms(p(zc_fresh_zc))}", "≤ 2 s", p(fresh) <= 2000)
        row(f"  seen by the other stack's watcher", fmt_ms(p(fresh_zc)),
            f"zeroconf, {n} services {fmt_ms(p(zc_fresh_baton))}", "", None)
        row(f"{n} agents started at once → all added", fmt_ms(ms(spawn_all)),
            f"zeroconf, {n} registered {fmt_ms(ms(zc_register_all))}", "", None)
        row(f"{n} agents SIGTERM at once → all removed", fmt_ms(ms(stop_all)),
            f"zeroconf, {n} unregistered {fmt_ms(ms(zc_unregister_all))}", "", None)
        row(f"{n} idle agents: mean RSS", f"{rss / n / 1024:.1f} MiB", f"{n} real `baton agent` processes", "", None)
        if self.verbose:
            print(f"  fleet: Baton→agents " + " ".join(f"{ms(x):.0f}" for x in fresh)
                  + " | zc→agents " + " ".join(f"{ms(x):.0f}" for x in fresh_zc)
                  + " | zc→zc " + " ".join(f"{ms(x):.0f}" for x in zc_fresh_zc)
                  + " | Baton→zc " + " ".join(f"{ms(x):.0f}" for x in zc_fresh_baton), file=sys.stderr)

    def run_names(self):
        """`baton describe` of one agent by name beside by address (a process each, from a
        configuration folder of its own that remembers where the device was reached), and a
        misspelt name (not_found, 68)."""
        home = os.path.join(self.log_dir, "cli-names")
        os.makedirs(home)
        env = dict(os.environ, XDG_CONFIG_HOME=home)
        agent = self.agent("names-bench")
        _, line = agent.expect(lambda l: l.startswith("listening on "), 10, "its 'listening on' line")
        address = "10.78.0.1:" + line.split()[2].split(":")[1]
        self.baton_live.event("added", "names-bench", 10)
        time.sleep(1.5)  # past its announcements

        def describe(device, expect=0):
            started = time.monotonic_ns()
            result = subprocess.run(["ip", "netns", "exec", self.network.b, self.baton, "describe", device,
                                     "--authorization", "anonymous", "-q"], capture_output=True, text=True, env=env)
            took = time.monotonic_ns() - started
            if result.returncode != expect:
                raise BenchFailure(f"baton describe {device} exited with {result.returncode}, not {expect}: "
                                   f"{result.stderr.strip()}")
            return took

        describe("names-bench")  # the first finds it through mDNS and remembers where it answered
        n = 10
        by_address = sum(describe(address) for _ in range(n))
        by_name = sum(describe("names-bench") for _ in range(n))
        by_name_case = sum(describe("NAMES-BENCH") for _ in range(n))
        misspelt = median([describe("names-bnech", expect=68) for _ in range(3)])
        self.stop_child(agent)
        row(f"{n} × baton describe by name (seen before)", fmt_ms(ms(by_name)),
            f"by address {fmt_ms(ms(by_address))}", "≤ 1.5×", ms(by_name) <= 1.5 * ms(by_address))
        row(f"  the name in other case", fmt_ms(ms(by_name_case)), "", "", None)
        row("baton describe of a misspelt name → 68", fmt_ms(ms(misspelt)), "the discovery window 3 s", "≤ 1 s",
            ms(misspelt) <= 1000)


def zeroconf_version():
    try:
        from importlib.metadata import version
        return version("zeroconf")
    except Exception:
        return "(version unknown)"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "zc-watcher":
        return zc_watcher()
    if len(sys.argv) > 1 and sys.argv[1] == "zc-watcher-once":
        return zc_watcher(once=True)
    if len(sys.argv) > 2 and sys.argv[1] == "zc-registrar":
        return zc_registrar(sys.argv[2])
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    rounds, fleet, verbose = 7, 100, False
    options = args[2:]
    while options:
        flag = options.pop(0)
        if flag == "--rounds" and options:
            rounds = int(options.pop(0))
        elif flag == "--fleet" and options:
            fleet = int(options.pop(0))
        elif flag in ("-v", "--verbose"):
            verbose = True
        else:
            print(f"unknown option {flag}", file=sys.stderr)
            return 2
    if os.geteuid() != 0:
        row("mDNS discovery figures", "skipped", "needs root for network namespaces", "", None)
        return 0
    bench = Bench(args[0], args[1], rounds, fleet, verbose)

    def terminated(signo, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGINT, terminated)
    status = 1
    try:
        bench.run()
        status = 0
    except BenchFailure as failure:
        print(f"discovery benchmark failed: {failure}", flush=True)
    except KeyboardInterrupt:
        print("discovery benchmark interrupted", file=sys.stderr)
        status = 130
    finally:
        # Ignore further Ctrl-C while tidying up, so that nothing is left behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        bench.cleanup()
        if status == 0:
            shutil.rmtree(bench.log_dir, ignore_errors=True)
        else:
            print(f"  (the processes' logs are in {bench.log_dir})", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
