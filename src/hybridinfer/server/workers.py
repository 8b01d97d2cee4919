"""``hybridinfer gateway --workers N``: N full gateway processes on one port.

Each worker binds the port itself with ``SO_REUSEPORT`` (``listener.bound_sockets``), so the
kernel spreads new connections evenly over the workers by their address hash. The other way,
one socket opened by the parent and inherited, was measured and not taken: ``BatchListener``
accepts up to 512 waiting connections per wake-up, so on a shared accept queue the worker
awake first takes most of a burst (``bench/worker_sockets.py``: 286 to 330 of 400, against
190 to 210 with ``SO_REUSEPORT``), and since each worker sheds on its own slots, an uneven
split refuses requests while the other worker has room.
Every worker keeps the single process's guarantees, since it is one: the guarded protocol
(slow-client header timeout), the body timeout of the app, the backlog (per worker), TLS and
batched accepts. Limit of this choice: connections still waiting in the accept queue of a
worker that dies are reset (the kernel does not hand them to the others).

A worker is a replica on a shared port: state that must hold across them (rate limits,
spend, policies, keys, node registrations, breaker-relevant health) is shared the way
replicas share it, through Redis and the store, so more than one worker requires
``cache: redis`` and a store other than the per-process SQLite file
(``require_shared_state``). The parent serves nothing: it starts worker 0 first (it
migrates the store and creates the admin key), then the others, restarts any that exits
(``supervisor.Supervised``: back-off from 1 s) and stops them all on SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from hybridinfer.errors import ConfigError
from hybridinfer.server.listener import bound_sockets
from hybridinfer.server.shedding import Refusal
from hybridinfer.server.supervisor import Supervised
from hybridinfer.settings import Settings

WORKER_HEADER = b"x-hybridinfer-worker"
"""Response header naming the worker (its index) that answered."""
WORKER_PID_HEADER = b"x-hybridinfer-worker-pid"
FIRST_WORKER_WAIT_S = 120.0
"""How long the parent waits for worker 0 to start (store migration, models) before the rest."""
STOP_GRACE_S = 10.0
"""A worker's graceful shutdown (uvicorn's 5 s) plus its own parts' stop, then SIGKILL."""

ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


def require_shared_state(settings: Settings) -> None:
    """More than one worker needs the state replicas share: refuse clearly otherwise."""
    if settings.workers <= 1:
        return
    missing = []
    if settings.cache != "redis":
        missing.append("cache: redis (with HYBRIDINFER_REDIS_URL) for rate limits and spend")
    if settings.resolved_store_url.startswith("sqlite"):
        missing.append("a shared store (store_url: postgresql+asyncpg://...) for keys and state")
    if missing:
        raise ConfigError(
            f"workers: {settings.workers} needs what replicas share: " + "; ".join(missing)
        )


class WorkerHeader:
    """Names the worker in every HTTP response (``x-hybridinfer-worker``, ``-pid``), so a
    caller or a test sees the spread; only installed when there is more than one worker."""

    def __init__(self, app: ASGIApp, index: int) -> None:
        self.app = app
        self.headers = ((WORKER_HEADER, b"%d" % index), (WORKER_PID_HEADER, b"%d" % os.getpid()))

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = self.headers

        async def send_named(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *headers]}
            await send(message)

        await self.app(scope, receive, send_named)

    def named(self, refuse_now: Callable[[Any], Refusal | None]) -> Callable[[Any], Refusal | None]:
        """``refuse_now`` (the server protocol's early refusal) with this worker's headers."""
        named = list(self.headers)

        def refuse(scope: Any) -> Refusal | None:
            refusal = refuse_now(scope)
            return None if refusal is None else ([*refusal[0], *named], refusal[1])

        return refuse


def worker_command(settings: Settings, config: Path | None, index: int) -> list[str]:
    """The command line of worker ``index``: this gateway, told which worker it is."""
    command = [sys.executable, "-m", "hybridinfer", "gateway", "--port", str(settings.port)]
    if config is not None:
        command += ["--config", str(config)]
    return [
        *command,
        "--log-format",
        settings.log_format,
        "--workers",
        str(settings.workers),
        "--worker-index",
        str(index),
    ]


class WorkerPool:
    """The parent of ``--workers N``: keeps N workers running until SIGTERM or SIGINT."""

    def __init__(self, commands: Sequence[Sequence[str]], first_ready: Path) -> None:
        """``first_ready`` is a file worker 0 makes once started (its metrics socket)."""
        self.workers = [Supervised(f"worker {i}", command) for i, command in enumerate(commands)]
        self._first_ready = first_ready
        self._stop = asyncio.Event()

    async def run(self) -> None:
        """Start the workers, wait for a stop signal, stop them all."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        try:
            await self._start()
            await self._stop.wait()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            await asyncio.gather(*(worker.stop(STOP_GRACE_S) for worker in self.workers))

    async def _start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._first_ready.unlink()  # a socket left by a worker killed earlier
        first, *others = self.workers
        await first.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FIRST_WORKER_WAIT_S
        while not self._first_ready.exists() and loop.time() < deadline:
            if self._stop.is_set():
                return
            await asyncio.sleep(0.1)
        for worker in others:
            await worker.start()


def worker_sockets(settings: Settings) -> list[socket.socket] | None:
    """A worker's own sockets on the shared port (None: a single process, which lets uvicorn
    bind as usual). Bound now, so a port taken by another program fails at once, but not
    listening: the kernel gives a worker connections only once it listens, after its start
    (a restarting worker's share would otherwise wait out its model loading)."""
    if settings.worker_index is None:
        return None
    host, port, backlog = settings.host, settings.port, settings.listen_backlog
    return bound_sockets(host, port, backlog, reuse_port=True, listen=False)
