"""``hybridinfer gateway``: ``--workers N`` without what workers share (one clear line, exit
1), the heap frozen once models have loaded, and the server's main loop."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner

from hybridinfer.cli import main
from tests.peers import free_port


@pytest.mark.parametrize(
    ("config", "missing"),
    [
        ("", "cache: redis"),
        ("cache: redis\n", "a shared store"),
    ],
)
def test_workers_without_shared_state_refuse_to_start_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, missing: str
) -> None:
    for name in ("HYBRIDINFER_STORE_URL", "HYBRIDINFER_CACHE", "HYBRIDINFER_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HYBRIDINFER_REDIS_URL", "redis://127.0.0.1:6379/0")  # not contacted
    config_file = tmp_path / "gateway.yaml"
    config_file.write_text(f"data_dir: {tmp_path}\n{config}")
    result = CliRunner().invoke(main, ["gateway", "--config", str(config_file), "--workers", "2"])
    assert result.exit_code == 1
    assert f"workers: 2 needs what replicas share: {missing}" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "workers").exists()  # nothing was started


def test_the_workers_setting_is_read_from_the_config_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HYBRIDINFER_CACHE", raising=False)
    config_file = tmp_path / "gateway.yaml"
    config_file.write_text(f"data_dir: {tmp_path}\nworkers: 3\n")
    result = CliRunner().invoke(main, ["gateway", "--config", str(config_file)])
    assert result.exit_code == 1
    assert "workers: 3 needs what replicas share" in result.output


async def test_the_heap_is_frozen_again_once_the_background_models_have_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The name and difficulty models load after the server starts; their objects must leave
    the collector's reach too, or every full collection walks them under load."""
    from hybridinfer.cli import serve

    still = ["the name model", "the name model", None]
    freezes: list[tuple[int, int]] = []

    class Loading:
        def loading(self) -> str | None:
            return still.pop(0) if len(still) > 1 else still[0]

    monkeypatch.setattr(serve, "LOADED_POLL_S", 0.01)
    monkeypatch.setattr(
        serve, "freeze_startup_heap", lambda threshold: freezes.append((len(still), threshold))
    )
    await serve._freeze_once_loaded(Loading(), 5000)  # type: ignore[arg-type]
    assert freezes == [(1, 5000)]  # once, after loading said it was done, at the setting


async def _answer(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


@pytest.mark.parametrize("how", ["signal", "flag"])
async def test_the_server_wakes_once_a_second_when_idle_and_at_once_to_exit(how: str) -> None:
    """uvicorn's own main loop wakes ten times a second; an idle gateway's only work there is
    once a second. An exit (a signal's handler, or the flag set by code) still ends it at once."""
    from hybridinfer.cli.serve import TICK_S, GracefulServer

    config = uvicorn.Config(_answer, host="127.0.0.1", port=free_port(), lifespan="off")
    server = GracefulServer(config)
    ticks: list[float] = []
    on_tick = server.on_tick

    async def counted(counter: int) -> bool:
        ticks.append(time.monotonic())
        return bool(await on_tick(counter))

    server.on_tick = counted  # type: ignore[method-assign]
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 -- uvicorn's readiness is a flag
        await asyncio.sleep(0.01)
    await asyncio.sleep(2.5 * TICK_S)
    assert 2 <= len(ticks) <= 4  # the first, then one a second (uvicorn's own: 25)
    asked = time.monotonic()
    if how == "signal":
        server.handle_exit(signal.SIGTERM, None)
    else:
        server.should_exit = True
    await asyncio.wait_for(serving, 5)
    assert time.monotonic() - asked < 0.5 * TICK_S
    assert ticks[-1] - asked < 0.1  # the exit was seen by a tick it woke, not the next due one
