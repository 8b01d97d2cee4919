"""Acceptance of ``--workers 2``: two real worker processes on one port, real Redis and
PostgreSQL, real HTTP."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter

import httpx
import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ADMIN_KEY, auth
from tests.scaleout.conftest import Gateway, Launch
from tests.scaleout.test_replicas import SENTIMENT, wait_for_fresh_minute

pytestmark = pytest.mark.integration

WORKER = "x-hybridinfer-worker"


def fresh_connection(key: str) -> httpx.Client:
    """No keep-alive: each request is a new connection, which the kernel may give to
    either worker (SO_REUSEPORT spreads connections, not requests)."""
    limits = httpx.Limits(max_keepalive_connections=0)
    return httpx.Client(headers=auth(key), timeout=30, limits=limits)


def answered_requests(gateway: Gateway) -> dict[str, float]:
    """``hybridinfer_requests_total{status="ok"}`` of one scrape, by worker."""
    with gateway.client() as client:
        scrape = client.get(gateway.url + "/metrics")
    assert scrape.status_code == 200, scrape.text
    counts: Counter[str] = Counter()
    for family in text_string_to_metric_families(scrape.text):
        for sample in family.samples:
            if sample.name == "hybridinfer_requests_total" and sample.labels["status"] == "ok":
                counts[sample.labels["worker"]] += sample.value
    return dict(counts)


def test_a_per_key_limit_holds_across_two_workers_and_one_scrape_counts_both(
    workers: Launch,
) -> None:
    (gateway,) = workers(2, rate_limit_per_minute=100_000)
    limit = 20
    with gateway.client() as admin:
        created = admin.post(
            "/v1/keys",
            json={"name": "app", "scopes": ["infer"], "rate_limit_per_minute": limit},
        )
    assert created.status_code == 201, created.text
    wait_for_fresh_minute()
    answers: list[tuple[int, str]] = []
    with fresh_connection(created.json()["key"]) as client:
        for _ in range(3 * limit):
            response = client.post(gateway.url + "/v1/infer", json=SENTIMENT)
            answers.append((response.status_code, response.headers[WORKER]))
    statuses = [status for status, _ in answers]
    assert set(statuses) == {200, 429}
    assert limit <= statuses.count(200) <= limit + 1  # holds within one request
    assert statuses[:limit] == [200] * limit
    served_by = Counter(worker for status, worker in answers if status == 200)
    assert set(served_by) == {"0", "1"}, served_by
    assert answered_requests(gateway) == {w: float(n) for w, n in served_by.items()}


def worker_pids(gateway: Gateway) -> dict[str, int]:
    """Worker index -> pid, from the parent's living children's command lines."""
    pids = {}
    for child in psutil.Process(gateway.process.pid).children():
        try:
            command = child.cmdline()
        except psutil.Error:  # a killed worker not reaped yet (a zombie), or gone
            continue
        if "--worker-index" not in command:  # a worker being restarted, forked but not exec'd
            continue
        pids[command[command.index("--worker-index") + 1]] = child.pid
    return pids


def test_a_killed_worker_is_restarted_and_no_request_fails_on_the_other(
    workers: Launch,
) -> None:
    (gateway,) = workers(2, rate_limit_per_minute=100_000)
    before = worker_pids(gateway)
    assert set(before) == {"0", "1"}
    failures: list[str] = []
    seen: Counter[str] = Counter()
    stop = threading.Event()

    def load() -> None:  # keep-alive: requests stay on the surviving worker's connection
        with httpx.Client(headers=auth(ADMIN_KEY), timeout=30) as client:
            while not stop.is_set():
                response = client.post(gateway.url + "/v1/infer", json=SENTIMENT)
                seen[response.headers.get(WORKER, "?")] += 1
                if response.status_code != 200:
                    failures.append(f"{response.status_code} {response.text}")

    thread = threading.Thread(target=load)
    thread.start()
    try:
        while not seen:
            time.sleep(0.05)
        survivor = next(iter(seen))
        victim = "1" if survivor == "0" else "0"
        os.kill(before[victim], signal.SIGKILL)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            now = worker_pids(gateway)
            if now.get(victim, before[victim]) != before[victim] and _answers(gateway, victim):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"worker {victim} was not restarted:\n{gateway.output()}")
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert seen[survivor] > 0
    assert set(seen) == {survivor}


def _answers(gateway: Gateway, worker: str) -> bool:
    """Whether ``worker`` answers on the shared port (a few new connections find it)."""
    with fresh_connection(ADMIN_KEY) as client:
        for _ in range(20):
            try:
                if client.get(gateway.url + "/readyz").headers.get(WORKER) == worker:
                    return True
            except httpx.HTTPError:
                continue
    return False


def test_sigterm_to_the_parent_stops_every_worker(workers: Launch) -> None:
    (gateway,) = workers(2)
    children = [psutil.Process(pid) for pid in worker_pids(gateway).values()]
    gateway.stop()
    assert gateway.process.returncode == 0, gateway.output()
    _gone, alive = psutil.wait_procs(children, timeout=5)
    assert alive == []
