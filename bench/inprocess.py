"""The gateway's control plane in the bench's own process, for the benches that drive its
ASGI app directly (``shed_cost``, ``frontdoor``, ``metrics_cost``): the bundled models built,
a throwaway data directory, the access log on (as served) into ``/dev/null``, the heap frozen
once the models have loaded (as served), the host's load average before and after."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bench.harness import REPO
from hybridinfer.control.plane import ControlPlane
from hybridinfer.core.heap import freeze_startup_heap
from hybridinfer.modelzoo import build_models
from hybridinfer.observe.logs import configure_logging
from hybridinfer.server.listener import new_event_loop
from hybridinfer.settings import Settings

KEY = "bench-admin-key-0123456789"
LOAD_TIMEOUT_S = 300.0


@asynccontextmanager
async def started_plane(data_dir: Path, **overrides: Any) -> AsyncIterator[ControlPlane]:
    """A started plane on the bundled models, one inference thread, the answer cache off (the
    benches send the same body again and again: they time the path, not reuse), its models
    loaded and its heap frozen as in a served gateway."""
    models_dir = REPO / ".hybridinfer" / "models"
    build_models(models_dir)
    settings = Settings(
        **{
            "data_dir": data_dir,
            "models_dir": models_dir,
            "bootstrap_key": SecretStr(KEY),
            "inference_threads": 1,
            "answer_cache": "off",
            **overrides,
        }
    )
    plane = ControlPlane(settings)
    await plane.start()
    try:
        # As a served gateway does once its models have loaded (cli/serve.py): the start-up
        # heap out of the collector's reach, or its full collections land in the timings.
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while (loading := plane.loading()) is not None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{loading} did not load in {LOAD_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.05)
        freeze_startup_heap()
        yield plane
    finally:
        await plane.stop()


async def _awaited(awaitable: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    return await awaitable


def run_in_process(run: Callable[[Path], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """``run(data_dir)`` on the served event loop (uvloop, ``server/listener.py``) with the
    access log on into ``/dev/null``; the result gains the load average (1, 5, 15 min) before
    and after."""
    load_before = os.getloadavg()
    with open(os.devnull, "w") as sink:
        configure_logging("info", "json", sink)
        with (
            tempfile.TemporaryDirectory() as data_dir,
            asyncio.Runner(loop_factory=new_event_loop) as runner,
        ):
            result: dict[str, Any] = runner.run(_awaited(run(Path(data_dir))))
    result["load_before"] = [round(x, 2) for x in load_before]
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return result
