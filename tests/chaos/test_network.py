"""The emulated network itself: a namespace is reachable over its veth link, the impairments
do what they say (measured), and nothing is left behind."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from bench.chaos.network import Namespace, Network, remove_stale, run

pytestmark = pytest.mark.integration

ECHO = """
import socket, sys, threading
address = sys.argv[1]
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind((address, 9000))
tcp = socket.create_server((address, 9001))
def echo_udp():
    while True:
        data, peer = udp.recvfrom(2048)
        udp.sendto(data, peer)
threading.Thread(target=echo_udp, daemon=True).start()
print("ready", flush=True)
while True:
    connection, _ = tcp.accept()
    with connection:
        while data := connection.recv(2048):
            connection.sendall(data)
"""


@pytest.fixture
def echo(network: Network) -> Iterator[Namespace]:
    """A UDP and TCP echo server inside the ``edge`` namespace."""
    namespace = network.namespaces["edge"]
    command = namespace.command([sys.executable, "-c", ECHO, namespace.link.address])
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    assert server.stdout.readline().strip() == "ready"
    try:
        yield namespace
    finally:
        namespace.link.restore()
        server.kill()
        server.wait()
        server.stdout.close()


def round_trip_ms(address: str, count: int = 5) -> float:
    """The median time of one TCP echo on an open connection."""
    with socket.create_connection((address, 9001), timeout=5) as connection:
        times = []
        for _ in range(count):
            started = time.perf_counter()
            connection.sendall(b"x")
            connection.recv(16)
            times.append((time.perf_counter() - started) * 1000.0)
    return sorted(times)[count // 2]


def echoed_share(address: str, count: int = 400, batch: int = 50) -> float:
    """The share of UDP datagrams that came back (sent in batches, each drained before the
    next, so the receive buffer never overflows)."""
    back = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.settimeout(0.3)
        for start in range(0, count, batch):
            for index in range(start, min(start + batch, count)):
                udp.sendto(str(index).encode(), (address, 9000))
            try:
                for _ in range(start, min(start + batch, count)):
                    udp.recv(64)
                    back += 1
            except TimeoutError:
                pass
    return back / count


def test_delay_loss_and_cut_are_what_they_say(echo: Namespace) -> None:
    address = echo.link.address
    clean = round_trip_ms(address)
    assert clean < 50.0
    echo.link.impair(delay_ms=200.0)
    slowed = round_trip_ms(address)
    assert 200.0 <= slowed < 200.0 + clean + 50.0
    echo.link.impair(loss=0.1)
    share = echoed_share(address)
    assert 0.70 <= share <= 0.90, f"{share:.3f} came back; 10 % loss each way keeps ~81 %"
    echo.link.cut()
    assert echoed_share(address, 50) == 0.0
    echo.link.restore()
    assert echoed_share(address, 50) == 1.0
    assert round_trip_ms(address) < 50.0


def test_a_crashed_run_is_cleaned_up_and_a_closed_one_leaves_nothing(network: Network) -> None:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    stale = f"{network.prefix}-{finished.pid}-leftover"
    run("ip", "netns", "add", stale)
    run("ip", "link", "add", f"{network.prefix}{finished.pid}h0", "type", "veth")
    assert stale in remove_stale()
    assert stale not in run("ip", "netns", "list")
    assert f"{network.prefix}{finished.pid}h0" not in run("ip", "-o", "link", "show")

    with Network(pid=finished.pid) as other:
        other.add_namespace("probe").link.cut()
    assert f"{network.prefix}-{finished.pid}-" not in run("ip", "netns", "list")
    assert f"{network.prefix}{finished.pid}" not in run("ip", "-o", "link", "show")
