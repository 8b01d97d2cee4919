"""Real processes: `hybridinfer up` started as a user would, talked to over real HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN_KEY, auth
from tests.services import postgres_url

__all__ = ["postgres_url"]


def free_port_pair() -> int:
    """A port p with p and p+1 both free (gateway and its cloud node)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port < 65000 and port_is_free(port + 1):
            return port
    raise RuntimeError("no free pair of ports")


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    url: str
    log: Path
    key: str = ADMIN_KEY

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=auth(self.key), timeout=10)

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


NODE_TOKEN = "e2e-node-token-0123456789"


def start_up(data_dir: Path, models_dir: Path, port: int | None, bootstrap: bool = True) -> Running:
    env = {
        **os.environ,
        "HYBRIDINFER_MODELS_DIR": str(models_dir),
        "HYBRIDINFER_NODE_TOKEN": NODE_TOKEN,
    }
    env.pop("HYBRIDINFER_BOOTSTRAP_KEY", None)
    # Where a request runs must not depend on how busy the shared machine is (the host's CPU
    # is the local node's load); tests of CPU admission set their own interval.
    env.setdefault("HYBRIDINFER_LOCAL_CPU_INTERVAL_S", "3600")
    env.setdefault("HYBRIDINFER_ANSWER_CACHE", "off")  # repeated requests must reach models
    if bootstrap:
        env["HYBRIDINFER_BOOTSTRAP_KEY"] = ADMIN_KEY
    command = [sys.executable, "-m", "hybridinfer", "up", "--data-dir", str(data_dir)]
    if port is not None:
        command += ["--port", str(port)]
    log = data_dir.parent / f"{data_dir.name}-{time.monotonic_ns()}.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    return Running(process, f"http://127.0.0.1:{port or 8080}", log)


def wait_until(check: object, timeout_s: float, what: str, running: Running) -> float:
    """Poll ``check()`` until true; return the seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if running.process.poll() is not None:
            pytest.fail(f"`hybridinfer up` exited early:\n{running.stderr()}")
        try:
            if check():  # type: ignore[operator]
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail(f"{what} not within {timeout_s} s:\n{running.stderr()}")


def cloud_ready(running: Running) -> bool:
    with running.client() as client:
        nodes = client.get("/v1/nodes").json().get("nodes", [])
    return any(n["id"] == "cloud-1" and n["status"] == "ready" for n in nodes)


def stop(running: Running) -> None:
    if running.process.poll() is None:
        running.process.send_signal(signal.SIGTERM)
        try:
            running.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            running.process.kill()
            running.process.wait()


def start_patiently(data_dir: Path, models_dir: Path) -> Running:
    """`hybridinfer up`, waited for until ready with its cloud node registered; its LLM
    servers can take minutes to start on a busy 2-core machine, and a port taken meanwhile
    restarts the cloud node, so the wait is long. Stopped by the caller."""
    running = start_up(data_dir, models_dir, free_port_pair())
    try:
        wait_until(
            lambda: httpx.get(running.url + "/readyz").status_code == 200, 240, "ready", running
        )
        wait_until(lambda: cloud_ready(running), 60, "cloud node registered", running)
    except BaseException:
        stop(running)
        raise
    return running


@pytest.fixture(scope="module")
def fresh_up(
    tmp_path_factory: pytest.TempPathFactory, models_dir: Path, minilm_models_dir: Path
) -> Iterator[Running]:
    """One fresh `hybridinfer up` (new data dir, the built models) shared by a module's tests,
    once it says it is up with every node of its own registered."""
    assert minilm_models_dir == models_dir, "up reads one models folder"
    process = start_up(tmp_path_factory.mktemp("up") / "data", models_dir, free_port_pair())
    try:
        wait_until(lambda: "hybridinfer is up" in process.stderr(), 90, "up", process)
        said = next(line for line in process.stderr().splitlines() if "is up" in line)
        assert "without" not in said, process.stderr()
        yield process
    finally:
        stop(process)


@pytest.fixture
def launch(tmp_path: Path, models_dir: Path, minilm_models_dir: Path) -> Iterator[object]:
    """Start `hybridinfer up` (stopped at the end of the test); waits until it is ready, which
    is once its cloud node has registered. The models are built before (MiniLM too, or `up`
    would export it within the wait)."""
    started: list[Running] = []

    def _launch(
        data_dir: Path | None = None, port: int | None = -1, bootstrap: bool = True
    ) -> Running:
        chosen = free_port_pair() if port == -1 else port
        running = start_up(data_dir or tmp_path / "data", models_dir, chosen, bootstrap)
        started.append(running)
        wait_until(
            lambda: httpx.get(running.url + "/readyz").status_code == 200, 60, "ready", running
        )
        return running

    yield _launch
    for running in started:
        stop(running)
