"""An emulated network on one host: network namespaces joined to the host by veth pairs.

Each namespace gets a veth pair to the root namespace with a private /30, its loopback up and a
default route to the host. The gateway's address sits on a device of its own in the root namespace,
so namespaced nodes reach it over their veth link and it reaches them at their veth address.

A link can be slowed, made lossy or cut: ``tc qdisc add|change|del dev <veth> root netem`` where
the kernel has ``sch_netem``; where it does not (some VM kernels are built without it), the same
impairment is applied by ``shaper.py``, a user-space netem the veth's egress is redirected to by
``tc`` (``clsact`` + ``mirred``). Delay is added on the host-to-namespace direction (it adds to
the round trip once); loss applies to both directions. A cut is 100 % loss.

Everything is named ``<prefix>-<pid>-…`` (namespaces) or ``<prefix><pid>…`` (devices): teardown
runs on exit (``atexit`` too), and a new run first removes what a crashed earlier run left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hybridinfer.server.supervisor import with_parent_death_signal

PREFIX = "hcx"
REPO = Path(__file__).resolve().parents[2]
STALE_NAMESPACE = re.compile(rf"^{PREFIX}-(\d+)-")
STALE_DEVICE = re.compile(rf"^{PREFIX}(\d+)[a-z]")


class NetworkError(RuntimeError):
    """An ``ip`` or ``tc`` command failed."""


def run(*args: str, namespace: str | None = None, check: bool = True) -> str:
    """Run one ``ip``/``tc`` command (inside ``namespace`` if given); its stdout."""
    command = ["ip", "netns", "exec", namespace, *args] if namespace else list(args)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise NetworkError(f"{' '.join(command)}: {done.stderr.strip()}")
    return done.stdout


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale() -> list[str]:
    """Delete namespaces and devices of earlier runs whose process is gone; their names."""
    removed = []
    for line in run("ip", "netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        match = STALE_NAMESPACE.match(name)
        if match and not pid_alive(int(match.group(1))):
            run("ip", "netns", "del", name, check=False)
            removed.append(name)
    for line in run("ip", "-o", "link", "show").splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        match = STALE_DEVICE.match(name)
        if match and not pid_alive(int(match.group(1))):
            run("ip", "link", "del", name, check=False)
            removed.append(name)
    return removed


def free_subnet(pid: int) -> ipaddress.IPv4Network:
    """A /24 in 10.213.0.0/16 with no address on this host yet (start picked by pid)."""
    used = run("ip", "-4", "-o", "addr", "show")
    for step in range(256):
        third = (pid + step) % 256
        subnet = ipaddress.IPv4Network(f"10.213.{third}.0/24")
        if f" 10.213.{third}." not in used:
            return subnet
    raise NetworkError("no free /24 in 10.213.0.0/16")


def netem_available(device: str) -> bool:
    """Whether the kernel has the netem qdisc (tried on ``device``, then removed)."""
    probe = ["tc", "qdisc", "add", "dev", device, "root", "netem", "delay", "0ms"]
    if subprocess.run(probe, capture_output=True, check=False).returncode != 0:
        return False
    run("tc", "qdisc", "del", "dev", device, "root", check=False)
    return True


@dataclass
class Direction:
    """One direction of a link: frames leaving ``device`` (in ``namespace``, None = host)."""

    device: str
    namespace: str | None
    tap: str
    use_netem: bool
    impaired: bool = False
    shaper: subprocess.Popen[str] | None = None

    def apply(self, delay_ms: float, loss: float) -> None:
        if self.use_netem:
            verb = "change" if self.impaired else "add"
            netem = ["netem", "delay", f"{delay_ms:g}ms", "loss", f"{loss * 100:g}%"]
            run("tc", "qdisc", verb, "dev", self.device, "root", *netem, namespace=self.namespace)
        else:
            assert self.shaper is not None
            assert self.shaper.stdin is not None
            self.shaper.stdin.write(f"{delay_ms:g} {loss:g}\n")
            self.shaper.stdin.flush()
            if not self.impaired:
                self._redirect()
        self.impaired = True

    def clear(self) -> None:
        if not self.impaired:
            return
        qdisc = "root" if self.use_netem else "clsact"
        run("tc", "qdisc", "del", "dev", self.device, qdisc, namespace=self.namespace, check=False)
        self.impaired = False

    def start_shaper(self) -> None:
        """Start the user-space shaper (idle until ``apply`` redirects the veth to it).

        Call it from the main thread: the parent-death signal fires when the starting
        *thread* ends, so a shaper started from a worker thread would die with that thread.
        """
        if self.use_netem or self.shaper is not None:
            return
        run("ip", "tuntap", "add", "dev", self.tap, "mode", "tap", namespace=self.namespace)
        run("ip", "link", "set", self.tap, "up", namespace=self.namespace)
        command = [sys.executable, "-m", "bench.chaos.shaper", self.tap, self.device]
        if self.namespace:
            command = ["ip", "netns", "exec", self.namespace, *command]
        self.shaper = subprocess.Popen(
            with_parent_death_signal(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert self.shaper.stdout is not None
        if self.shaper.stdout.readline().strip() != "ready":
            raise NetworkError(f"the shaper on {self.device} did not start")

    def _redirect(self) -> None:
        run("tc", "qdisc", "add", "dev", self.device, "clsact", namespace=self.namespace)
        redirect = ["action", "mirred", "egress", "redirect", "dev", self.tap]
        match_all = ["protocol", "all", "u32", "match", "u32", "0", "0"]
        filter_args = ["tc", "filter", "add", "dev", self.device, "egress", *match_all]
        run(*filter_args, *redirect, namespace=self.namespace)

    def close(self) -> None:
        self.clear()
        if self.shaper is not None:
            for pipe in (self.shaper.stdin, self.shaper.stdout):
                with contextlib.suppress(OSError):
                    assert pipe is not None
                    pipe.close()
            try:
                self.shaper.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.shaper.kill()
                self.shaper.wait()
            self.shaper = None
            if self.namespace is None:
                run("ip", "link", "del", self.tap, check=False)


@dataclass
class Link:
    """The veth pair between the host and one namespace."""

    host_device: str
    host_address: str
    address: str
    """The namespace side's address: where the host reaches what runs inside."""
    outbound: Direction
    """Host → namespace."""
    inbound: Direction
    """Namespace → host."""
    delay_ms: float = 0.0
    loss: float = 0.0

    def impair(self, delay_ms: float = 0.0, loss: float = 0.0) -> None:
        """Add ``delay_ms`` towards the namespace and lose ``loss`` (0..1) of frames both ways."""
        self.delay_ms, self.loss = delay_ms, loss
        self.outbound.apply(delay_ms, loss)
        if loss > 0.0:
            self.inbound.apply(0.0, loss)
        else:
            self.inbound.clear()

    def cut(self) -> None:
        """100 % loss both ways: nothing crosses the link."""
        self.impair(self.delay_ms, 1.0)

    def restore(self) -> None:
        """A clean link again."""
        self.delay_ms, self.loss = 0.0, 0.0
        self.outbound.clear()
        self.inbound.clear()

    def close(self) -> None:
        self.outbound.close()
        self.inbound.close()


@dataclass
class Namespace:
    """A network namespace joined to the host by ``link``."""

    name: str
    link: Link

    def command(self, command: list[str]) -> list[str]:
        """``command`` run inside this namespace, dying with the process that starts it."""
        return with_parent_death_signal(["ip", "netns", "exec", self.name, *command])


@dataclass
class Network:
    """Namespaces on veth links, plus the gateway's host address; a context manager."""

    prefix: str = PREFIX
    pid: int = field(default_factory=os.getpid)
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    use_netem: bool | None = None
    _subnet: ipaddress.IPv4Network | None = None
    _closed: bool = False

    @property
    def gateway_address(self) -> str:
        """Where the gateway listens: a /32 on the host every namespace routes to."""
        assert self._subnet is not None
        return str(self._subnet[254])

    @property
    def impairment(self) -> str:
        """How links are impaired here: the kernel's netem, or the user-space shaper."""
        return "tc netem" if self.use_netem else "tc mirred + user-space netem (no sch_netem)"

    def __enter__(self) -> Network:
        remove_stale()
        self._subnet = free_subnet(self.pid)
        atexit.register(self.close)
        # A veth pair with both ends on the host stands in for a dummy device (not every
        # kernel has the dummy driver): it carries the gateway's /32 and nothing else.
        anchor, peer = f"{self.prefix}{self.pid}ga", f"{self.prefix}{self.pid}gb"
        run("ip", "link", "add", anchor, "type", "veth", "peer", "name", peer)
        run("ip", "addr", "add", f"{self.gateway_address}/32", "dev", anchor)
        run("ip", "link", "set", peer, "up")
        run("ip", "link", "set", anchor, "up")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_namespace(self, role: str) -> Namespace:
        """A new namespace named after ``role`` with its veth link up and routed."""
        assert self._subnet is not None
        index = len(self.namespaces)
        name = f"{self.prefix}-{self.pid}-{role}"
        host_device = f"{self.prefix}{self.pid}h{index}"
        inner_device = f"{self.prefix}{self.pid}n{index}"
        host_address = str(self._subnet[4 * index + 1])
        address = str(self._subnet[4 * index + 2])
        run("ip", "netns", "add", name)
        run("ip", "link", "add", host_device, "type", "veth", "peer", "name", inner_device)
        run("ip", "link", "set", inner_device, "netns", name)
        run("ip", "addr", "add", f"{host_address}/30", "dev", host_device)
        run("ip", "link", "set", host_device, "up")
        run("ip", "addr", "add", f"{address}/30", "dev", inner_device, namespace=name)
        run("ip", "link", "set", inner_device, "up", namespace=name)
        run("ip", "link", "set", "lo", "up", namespace=name)
        run("ip", "route", "add", "default", "via", host_address, namespace=name)
        if self.use_netem is None:
            self.use_netem = netem_available(host_device)
        outbound = Direction(host_device, None, f"{self.prefix}{self.pid}t{index}", self.use_netem)
        inbound = Direction(inner_device, name, "shape0", self.use_netem)
        outbound.start_shaper()
        inbound.start_shaper()
        link = Link(host_device, host_address, address, outbound, inbound)
        namespace = self.namespaces[role] = Namespace(name, link)
        return namespace

    def close(self) -> None:
        """Stop shapers, delete namespaces (their veth pairs go with them) and the anchor."""
        if self._closed:
            return
        self._closed = True
        for namespace in self.namespaces.values():
            namespace.link.close()
            run("ip", "netns", "del", namespace.name, check=False)
        run("ip", "link", "del", f"{self.prefix}{self.pid}ga", check=False)
        atexit.unregister(self.close)
