"""``--workers N``: the shared-state check, the worker header, the shared port, and the
parent that starts worker 0 first and stops every worker on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.server.workers import (
    WorkerHeader,
    WorkerPool,
    require_shared_state,
    worker_command,
    worker_sockets,
)
from hybridinfer.settings import Settings

POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/hybridinfer"


def test_more_than_one_worker_needs_redis_and_a_shared_store(tmp_path: Path) -> None:
    require_shared_state(Settings(data_dir=tmp_path))  # one process: anything goes
    with pytest.raises(ConfigError, match="cache: redis") as alone:
        require_shared_state(Settings(data_dir=tmp_path, workers=2, store_url=POSTGRES))
    assert "shared store" not in alone.value.message
    with pytest.raises(ConfigError, match="shared store"):
        require_shared_state(Settings(data_dir=tmp_path, workers=2, cache="redis"))
    require_shared_state(Settings(data_dir=tmp_path, workers=2, cache="redis", store_url=POSTGRES))


def test_a_worker_command_names_its_index_and_keeps_the_port_and_config(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path, workers=3, port=9001)
    command = worker_command(settings, tmp_path / "c.yaml", 2)
    assert command[:4] == [sys.executable, "-m", "hybridinfer", "gateway"]
    pairs = dict(zip(command[4::2], command[5::2], strict=True))
    assert pairs == {
        "--port": "9001",
        "--config": str(tmp_path / "c.yaml"),
        "--log-format": settings.log_format,
        "--workers": "3",
        "--worker-index": "2",
    }


async def test_the_worker_header_names_the_worker_on_responses_only() -> None:
    seen: list[MutableMapping[str, Any]] = []

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"a", b"b")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async def send(message: MutableMapping[str, Any]) -> None:
        seen.append(message)

    await WorkerHeader(app, 1)({"type": "http"}, None, send)
    assert seen[0]["headers"] == [
        (b"a", b"b"),
        (b"x-hybridinfer-worker", b"1"),
        (b"x-hybridinfer-worker-pid", str(os.getpid()).encode()),
    ]
    assert seen[1] == {"type": "http.response.body", "body": b"ok"}
    seen.clear()
    await WorkerHeader(app, 1)({"type": "lifespan"}, None, send)
    assert seen[0]["headers"] == [(b"a", b"b")]


def test_workers_share_the_port_and_take_connections_only_once_listening(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(data_dir=tmp_path, port=port, workers=2, worker_index=0)
    assert worker_sockets(settings.model_copy(update={"worker_index": None})) is None
    first = worker_sockets(settings)
    second = worker_sockets(settings.model_copy(update={"worker_index": 1}))
    assert first is not None
    assert second is not None
    try:
        with pytest.raises(ConnectionRefusedError):  # bound, not yet listening
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        for listening in (*first, *second):
            listening.listen(8)
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        for listening in (*first, *second):
            listening.close()


async def test_the_pool_starts_worker_0_first_and_sigterm_stops_them_all(
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    order = tmp_path / "order"
    script = (
        "import sys, time, pathlib\n"
        "seen = pathlib.Path(sys.argv[3]).exists()\n"
        "pathlib.Path(sys.argv[1]).open('a').write(f'{sys.argv[2]}:{seen}\\n')\n"
        "time.sleep(0.5)\n"
        "if sys.argv[2] == '0': pathlib.Path(sys.argv[3]).touch()\n"
        "time.sleep(60)\n"
    )
    commands = [[sys.executable, "-c", script, str(order), str(i), str(ready)] for i in (0, 1)]
    pool = WorkerPool(commands, ready)
    running = asyncio.create_task(pool.run())
    for _ in range(200):
        if order.exists() and len(order.read_text().split()) == 2:
            break
        await asyncio.sleep(0.05)
    assert order.read_text().split() == ["0:False", "1:True"]  # 1 after 0 had started
    processes = [worker.process for worker in pool.workers]
    os.kill(os.getpid(), signal.SIGTERM)  # the pool's handler, not the default action
    await asyncio.wait_for(running, 15)
    assert all(p is not None and p.returncode == -signal.SIGTERM for p in processes)
