"""The gateway's event loop accepts every waiting connection in a few turns, however busy the
loop is (libuv alone accepts one per turn), over plain TCP and TLS."""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from hybridinfer.server import listener
from hybridinfer.server.listener import BatchListener, Loop, bound_sockets
from tests.peers import require

WAITING = 300


class Counting(asyncio.Protocol):
    """Counts opened connections; answers ``ping`` with ``pong``."""

    opened = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        type(self).opened += 1
        self.transport: Any = transport  # uvloop's TLS transport is no asyncio.Transport

    def data_received(self, data: bytes) -> None:
        self.transport.write(b"pong")


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    running = Loop()
    Counting.opened = 0
    yield running
    running.close()


def turns_until(loop: asyncio.AbstractEventLoop, done: object, limit: int) -> int:
    """Run the loop one turn at a time (a callback that reschedules itself) until ``done()``;
    how many turns it took, at most ``limit``."""
    turns = 0

    async def count() -> None:
        nonlocal turns
        while not done() and turns < limit:  # type: ignore[operator]
            turns += 1
            await asyncio.sleep(0)

    loop.run_until_complete(count())
    return turns


@contextmanager
def serving(loop: asyncio.AbstractEventLoop, **options: Any) -> Iterator[Any]:
    """A ``Counting`` server made by ``loop.create_server(**options)``, closed at the end."""
    server = loop.run_until_complete(loop.create_server(Counting, **options))
    try:
        yield server
    finally:
        server.close()
        loop.run_until_complete(server.wait_closed())


def port_of(server: Any) -> int:
    return int(server.sockets[0].getsockname()[1])


@pytest.fixture
def tls() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for 127.0.0.1 and a client context trusting it."""
    ca = require("trustme").CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    return server_context, client_context


async def ping(port: int, client_context: ssl.SSLContext) -> bytes:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=client_context, server_hostname="127.0.0.1"
    )
    writer.write(b"ping")
    answer = await reader.readexactly(4)
    writer.close()
    return answer


def test_a_burst_of_waiting_connections_is_accepted_in_a_few_turns(
    loop: asyncio.AbstractEventLoop,
) -> None:
    with serving(loop, host="127.0.0.1", port=0, backlog=WAITING + 10) as server:
        assert isinstance(server, BatchListener)
        clients = [socket.create_connection(("127.0.0.1", port_of(server))) for _ in range(WAITING)]
        try:
            # All of them wait in the kernel's accept queue; libuv would take one per turn.
            turns = turns_until(loop, lambda: Counting.opened == WAITING, limit=50)
            assert Counting.opened == WAITING
            assert turns <= 5
        finally:
            for client in clients:
                client.close()


def test_tls_connections_are_handshaken_and_served(
    loop: asyncio.AbstractEventLoop, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server_context, client_context = tls
    with serving(loop, host="127.0.0.1", port=0, ssl=server_context) as server:
        assert loop.run_until_complete(ping(port_of(server), client_context)) == b"pong"


def test_a_failed_handshake_concerns_only_that_client(
    loop: asyncio.AbstractEventLoop, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server_context, client_context = tls

    async def plain_then_tls(port: int) -> bytes:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\n\r\n")  # not a TLS hello: the handshake fails
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.close()
        return await ping(port, client_context)

    with serving(loop, host="127.0.0.1", port=0, ssl=server_context) as server:
        assert loop.run_until_complete(plain_then_tls(port_of(server))) == b"pong"
        assert server.is_serving()


def test_out_of_descriptors_pauses_accepting_then_resumes(
    loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listener, "ACCEPT_RETRY_S", 0.05)

    class Exhausted(socket.socket):
        failures = 1

        def accept(self) -> tuple[socket.socket, object]:
            if Exhausted.failures:
                Exhausted.failures -= 1
                raise OSError(errno.EMFILE, "Too many open files")
            return super().accept()

    listening = Exhausted(socket.AF_INET, socket.SOCK_STREAM)
    listening.bind(("127.0.0.1", 0))
    with serving(loop, sock=listening, backlog=8) as server:
        client = socket.create_connection(("127.0.0.1", port_of(server)))
        try:
            # The first accept fails: no spinning on the readable socket; after the pause the
            # waiting connection is accepted.
            loop.run_until_complete(asyncio.sleep(0.01))
            assert Counting.opened == 0
            loop.run_until_complete(asyncio.sleep(0.2))
            assert Counting.opened == 1
        finally:
            client.close()


def test_a_name_binds_every_address_it_resolves_to_on_one_port() -> None:
    sockets = bound_sockets("localhost", 0, 8)
    try:
        ports = {listening.getsockname()[1] for listening in sockets}
        families = {listening.family for listening in sockets}
        assert len(ports) == 1
        assert socket.AF_INET in families
        assert all(not listening.getblocking() for listening in sockets)
    finally:
        for listening in sockets:
            listening.close()


def test_other_servers_are_left_to_uvloop(loop: asyncio.AbstractEventLoop) -> None:
    with serving(loop, host="127.0.0.1", port=0, reuse_port=True) as server:
        assert not isinstance(server, BatchListener)
