"""deploy/prometheus and deploy/grafana against the real Prometheus (Debian `prometheus`):
the alert rules pass `promtool check rules` and their unit tests, and a real Prometheus
scrapes a real gateway with the shipped scrape config and answers a request counter back
through its HTTP API. Without the binaries the tests skip, except under CI where they fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import ADMIN_KEY, REPO, auth
from tests.peers import free_port, gateway_process

PROMETHEUS = REPO / "deploy" / "prometheus"
DASHBOARD = REPO / "deploy" / "grafana" / "hybridinfer.json"
SENTIMENT = {"task": "sentiment", "inputs": {"text": "I love this"}}


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (Debian package `prometheus`)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def test_alert_rules_pass_promtool_check_and_their_unit_tests() -> None:
    promtool = binary("promtool")
    for command in (["check", "rules", "alerts.yml"], ["test", "rules", "alerts.test.yml"]):
        done = subprocess.run(
            [promtool, *command], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_is_grafana_json_over_our_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"]
    assert dashboard["title"]
    assert dashboard["schemaVersion"] >= 30
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    titles = " ".join(panel["title"] for panel in dashboard["panels"]).lower()
    for topic in ("tier", "latency", "spend", "node", "breaker"):
        assert topic in titles
    for panel in dashboard["panels"]:
        assert panel["targets"]
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"}


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    return [e.replace("$__rate_interval", "1m").replace("$__range", "5m") for e in expressions]


@pytest.fixture
def gateway(tmp_path: Path, models_dir: Path) -> Iterator[str]:
    """A real gateway process (embedded SQLite, in-memory cache and queue) on a free port."""
    data_dir = tmp_path / "gateway"
    with gateway_process(data_dir, models_dir, ADMIN_KEY, log_level="warning") as (url, _):
        yield url


@pytest.fixture
def prometheus(tmp_path: Path, gateway: str) -> Iterator[str]:
    """A real Prometheus scraping ``gateway`` every second with the shipped scrape config."""
    executable = binary("prometheus")
    key_file = tmp_path / "admin-key"
    key_file.write_text(ADMIN_KEY)
    config: dict[str, Any] = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(PROMETHEUS / "alerts.yml")]
    (job,) = config["scrape_configs"]
    job["authorization"]["credentials_file"] = str(key_file)
    job["static_configs"] = [{"targets": [gateway.removeprefix("http://")]}]
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config))
    port = free_port()
    log = tmp_path / "prometheus.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                executable,
                f"--config.file={config_file}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: ready(url, "/-/ready"), 60, lambda: log.read_text())
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def ready(url: str, path: str = "/readyz") -> bool:
    try:
        return httpx.get(url + path, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until(check: Any, seconds: float, explain: Any) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    pytest.fail(f"not within {seconds} s: {explain()}")


def query(prometheus: str, expression: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{prometheus}/api/v1/query", params={"query": expression}, timeout=5)
    body = response.json()
    assert body["status"] == "success", f"{expression}: {body}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def test_prometheus_scrapes_the_gateway_and_answers_the_request_counter(
    gateway: str, prometheus: str
) -> None:
    with httpx.Client(base_url=gateway, headers=auth(), timeout=30) as client:
        for _ in range(5):
            assert client.post("/v1/infer", json=SENTIMENT).status_code == 200
    counter = 'sum(hybridinfer_requests_total{task="sentiment", tier="local", status="ok"})'

    def counted() -> bool:
        result = query(prometheus, counter)
        return bool(result) and float(result[0]["value"][1]) == 5

    wait_until(counted, 60, lambda: query(prometheus, "up"))
    (target,) = httpx.get(f"{prometheus}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
    assert target["health"] == "up", target
    rules = httpx.get(f"{prometheus}/api/v1/rules", timeout=5).json()["data"]["groups"]
    names = {rule["name"] for group in rules for rule in group["rules"]}
    assert "HybridInferBreakerOpen" in names
    assert len(names) == 7
    for expression in dashboard_queries():  # every panel's query parses and runs
        query(prometheus, expression)
    stages = query(prometheus, "sum by (stage) (hybridinfer_stage_seconds_count)")
    assert {sample["metric"]["stage"] for sample in stages} >= {"gateway", "execute"}
    # The process froze its start-up heap: full collections do not walk it (GC pauses).
    (frozen,) = query(prometheus, "hybridinfer_gc_frozen_objects")
    assert float(frozen["value"][1]) > 50_000, frozen
