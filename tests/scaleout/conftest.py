"""Several real `hybridinfer gateway` processes sharing the machine's PostgreSQL, Redis and
NATS JetStream, each test on a fresh database, Redis key prefix and JetStream stream."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import ADMIN_KEY, auth
from tests.peers import free_port
from tests.services import NATS_URL, REDIS_URL, postgres_url, require_service, unique

__all__ = ["postgres_url"]

PG_CLUSTER = "pg_ctlcluster --skip-systemctl-redirect {version} main {action}"
REDIS_START = (
    "redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save '' "
    "--appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log"
)


@dataclass
class Gateway:
    """One gateway process."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def client(self, timeout: float = 10.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=auth(ADMIN_KEY), timeout=timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait_ready(gateway: Gateway, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if gateway.process.poll() is not None:
            pytest.fail(f"gateway exited early:\n{gateway.output()}")
        try:
            if httpx.get(gateway.url + "/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"gateway not ready within {timeout_s} s:\n{gateway.output()}")


Launch = Callable[..., list[Gateway]]


@pytest.fixture
def cluster(tmp_path: Path, models_dir: Path, postgres_url: str) -> Iterator[Launch]:
    """``launch(n, **settings)`` starts ``n`` gateways on one PostgreSQL database, one Redis
    prefix and one JetStream stream (all fresh for this test); all stopped at the end."""
    require_service(REDIS_URL, "Redis")
    require_service(NATS_URL, "NATS")
    started: list[Gateway] = []
    # Three replicas on this host's 2 cores read each other's contention as their loop's
    # demand and would refuse the bursts these tests send at once: the CPU bound is off.
    shared = {
        "cache_prefix": unique("hi-test:") + ":",
        "queue_stream": unique("HI_TEST_"),
        "shed_max_busy": 0.0,
    }

    def launch(count: int, **settings: Any) -> list[Gateway]:
        gateways = [
            _start(tmp_path, models_dir, postgres_url, {**shared, **settings}) for _ in range(count)
        ]
        started.extend(gateways)
        for gateway in gateways:
            wait_ready(gateway)
        return gateways

    yield launch
    for gateway in started:
        gateway.stop()


@pytest.fixture
def workers(tmp_path: Path, models_dir: Path, postgres_url: str) -> Iterator[Launch]:
    """``launch(n, **settings)`` starts one ``hybridinfer gateway --workers n`` (a parent and
    its n worker processes on one port) on a fresh database and Redis prefix; the memory
    queue, so NATS is not needed. Stopped (SIGTERM to the parent) at the end."""
    require_service(REDIS_URL, "Redis")
    started: list[Gateway] = []

    def launch(count: int, **settings: Any) -> list[Gateway]:
        shared = {"cache_prefix": unique("hi-test:") + ":", "queue": "memory", **settings}
        gateway = _start(tmp_path, models_dir, postgres_url, shared, ("--workers", str(count)))
        started.append(gateway)
        wait_ready(gateway)
        return [gateway]

    yield launch
    for gateway in started:
        gateway.stop()


def _start(
    tmp_path: Path,
    models_dir: Path,
    store_url: str,
    settings: dict[str, Any],
    arguments: tuple[str, ...] = (),
) -> Gateway:
    port = free_port()
    config = {
        "data_dir": str(tmp_path / f"gateway-{port}"),
        "models_dir": str(models_dir),
        "cache": "redis",
        "queue": "nats",
        "inference_threads": 1,
        "log_level": "warning",
        "answer_cache": "off",  # repeated requests must reach models (test_answers.py: on)
        **settings,
    }
    config_file = tmp_path / f"gateway-{port}.yaml"
    config_file.write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "HYBRIDINFER_STORE_URL": store_url,
        "HYBRIDINFER_REDIS_URL": REDIS_URL,
        "HYBRIDINFER_NATS_URL": NATS_URL,
        "HYBRIDINFER_BOOTSTRAP_KEY": ADMIN_KEY,
    }
    command = [sys.executable, "-m", "hybridinfer", "gateway", "--config", str(config_file)]
    log = tmp_path / f"gateway-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, "--port", str(port), *arguments],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    return Gateway(process, f"http://127.0.0.1:{port}", log)


def postgres_version() -> str:
    return sorted(os.listdir("/etc/postgresql"))[-1]


def run_shell(command: str) -> None:
    subprocess.run(command, shell=True, check=True, timeout=120, capture_output=True)


def metric(gateway: Gateway, name: str) -> float:
    """One sample of ``GET /metrics``."""
    with gateway.client() as client:
        for line in client.get("/metrics").text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"no metric {name}")
