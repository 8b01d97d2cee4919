"""Server processes the benches start: wait until one answers, stop it, run the bench upstream."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness import REPO


def wait_ready(process: subprocess.Popen[bytes], url: str, timeout_s: float, name: str) -> None:
    """Poll ``url`` until it answers 2xx; fail early if the process exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    stop_process(process)
    raise RuntimeError(f"{name} did not become ready in {timeout_s:.0f} s ({url})")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 15 s."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def server_process(
    command: list[str], ready_url: str, name: str, log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A server process (output in ``log``), ready once ``ready_url`` answers; stopped after."""
    with log.open("w") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=output, cwd=REPO)
        try:
            wait_ready(process, ready_url, timeout_s=120, name=name)
            yield process
        finally:
            stop_process(process)


@contextmanager
def upstream_process(port: int, log: Path = Path(os.devnull)) -> Iterator[str]:
    """``bench/upstream.py`` on ``port``; yields its base URL."""
    command = [sys.executable, "-m", "bench.upstream", "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    with server_process(command, f"{url}/health", "bench upstream", log):
        yield url
