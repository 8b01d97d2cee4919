"""Shared bench plumbing: machine facts, percentiles, results files, a gateway process."""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent


def machine() -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": {
            name: version(name)
            for name in ("hybridinfer", "onnxruntime", "starlette", "uvicorn", "numpy")
        },
    }


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    array = np.asarray(samples_ms, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(array, 50)), 4),
        "p95": round(float(np.percentile(array, 95)), 4),
        "p99": round(float(np.percentile(array, 99)), 4),
        "mean": round(float(array.mean()), 4),
        "n": int(array.size),
    }


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **payload}, indent=2) + "\n")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def gateway_process(
    data_dir: Path, key: str, models_dir: Path, extra_env: dict[str, str] | None = None
) -> Iterator[int]:
    """`hybridinfer up` on a free port pair, logging as by default (an access line a request,
    into /dev/null); yields the gateway port once it is ready."""
    import urllib.request

    port = free_port()
    env = {
        **os.environ,
        "HYBRIDINFER_BOOTSTRAP_KEY": key,
        "HYBRIDINFER_MODELS_DIR": str(models_dir),
        # The benches repeat the same bodies to time the path: reused answers would time the
        # answer cache instead (bench/answercache.py measures that).
        "HYBRIDINFER_ANSWER_CACHE": "off",
        **(extra_env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "hybridinfer",
        "up",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
    ]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("gateway did not become ready")
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
