"""The event loop of the gateway and node processes: uvloop, with listeners that accept every
waiting connection.

libuv (under uvloop) accepts one connection per turn of the event loop (libuv pull request
3696, "don't accept() connections in a loop"). Under overload a turn of the gateway's loop
takes 10 to 40 ms, so it accepted 25 to 90 connections a second, whatever the listen
backlog: a client that opened connections faster waited in the kernel's accept queue until
its own timeout, with no answer, although the gateway would have answered it at once with a
503 and ``Retry-After``. asyncio's own loop accepts up to the backlog per turn, but is slower
at everything else.

``Loop`` keeps uvloop and serves TCP listeners through ``BatchListener``: each time the
listening socket is readable it accepts up to ``ACCEPT_BATCH`` connections and hands each to
uvloop as an accepted socket (plain or TLS), as asyncio does. When the process runs out of
file descriptors it stops accepting for ``ACCEPT_RETRY_S`` instead of spinning.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl as ssl_module
from collections.abc import Callable, Sequence
from typing import Any

import uvloop

logger = logging.getLogger(__name__)

ACCEPT_BATCH = 512
"""Connections accepted per readiness of a listening socket (the rest on the next turn)."""

ACCEPT_RETRY_S = 1.0
"""Pause after the process ran out of descriptors or buffers while accepting."""

_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

ProtocolFactory = Callable[[], asyncio.BaseProtocol]


def bound_sockets(
    host: str, port: int, backlog: int, *, reuse_port: bool = False, listen: bool = True
) -> list[socket.socket]:
    """Listening, non-blocking sockets on every address ``host`` resolves to (as asyncio's
    ``create_server`` binds them: address reuse on, IPv6 sockets IPv6 only).

    ``reuse_port`` lets several processes bind the same port (``SO_REUSEPORT``): the kernel
    spreads new connections over their sockets (``--workers``). Without ``listen`` the
    sockets are bound only: a connection is given to a socket once it listens, which
    ``Loop.create_server`` does when the server starts."""
    infos = socket.getaddrinfo(
        host, port, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            if sockets and port == 0:  # every address on the port the first one was given
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            listening = socket.socket(family, kind, proto)
            sockets.append(listening)
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                listening.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listening.bind(address)
            if listen:
                listening.listen(backlog)
            listening.setblocking(False)
    except OSError:
        for listening in sockets:
            listening.close()
        raise
    return sockets


class BatchListener:
    """Listening sockets whose waiting connections are accepted in batches; the part of
    ``asyncio.Server`` that uvicorn uses (``sockets``, ``close``, ``wait_closed``)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        protocol_factory: ProtocolFactory,
        sockets: Sequence[socket.socket],
        ssl: ssl_module.SSLContext | None,
    ) -> None:
        self._loop = loop
        self._factory = protocol_factory
        self._sockets = list(sockets)
        self._ssl = ssl
        self._opening: set[asyncio.Task[Any]] = set()
        self._serving = True
        for listening in self._sockets:
            loop.add_reader(listening.fileno(), self._accept, listening)

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return tuple(self._sockets)

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_serving(self) -> bool:
        return self._serving

    def _accept(self, listening: socket.socket) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                connection, _ = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as error:
                if error.errno not in _OUT_OF_RESOURCES:
                    raise
                logger.warning(
                    "cannot accept connections (%s): trying again in %g s", error, ACCEPT_RETRY_S
                )
                self._loop.remove_reader(listening.fileno())
                self._loop.call_later(ACCEPT_RETRY_S, self._resume, listening)
                return
            connection.setblocking(False)
            opening = self._loop.create_task(
                self._loop.connect_accepted_socket(self._factory, connection, ssl=self._ssl)
            )
            self._opening.add(opening)
            opening.add_done_callback(self._opened)

    def _resume(self, listening: socket.socket) -> None:
        if self._serving:
            self._loop.add_reader(listening.fileno(), self._accept, listening)

    def _opened(self, opening: asyncio.Task[Any]) -> None:
        """A connection that failed before it opened (a TLS handshake refused, a client gone)
        concerns that client only."""
        self._opening.discard(opening)
        if not opening.cancelled() and (error := opening.exception()) is not None:
            logger.debug("connection failed before it opened: %r", error)

    def close(self) -> None:
        """Stop accepting; connections already open are their protocols' to close."""
        if not self._serving:
            return
        self._serving = False
        for listening in self._sockets:
            self._loop.remove_reader(listening.fileno())
            listening.close()

    async def wait_closed(self) -> None:
        """Connections still being opened (TLS handshakes) finish or fail first."""
        if self._opening:
            await asyncio.wait(set(self._opening))


class Loop(uvloop.Loop):
    """uvloop, whose TCP servers accept waiting connections in batches (``BatchListener``)."""

    async def create_server(  # type: ignore[override]
        self,
        protocol_factory: ProtocolFactory,
        host: str | None = None,
        port: int | None = None,
        *,
        sock: socket.socket | None = None,
        ssl: ssl_module.SSLContext | None = None,
        backlog: int = 100,
        **options: Any,
    ) -> Any:
        if sock is not None and host is None and port is None and not options:
            sock.listen(backlog)
            sock.setblocking(False)
            return BatchListener(self, protocol_factory, [sock], ssl)
        if sock is None and isinstance(host, str) and port is not None and not options:
            return BatchListener(self, protocol_factory, bound_sockets(host, port, backlog), ssl)
        uvloop_create_server: Any = super().create_server  # typed as overloads
        return await uvloop_create_server(
            protocol_factory, host, port, sock=sock, ssl=ssl, backlog=backlog, **options
        )


def new_event_loop() -> asyncio.AbstractEventLoop:
    return Loop()
