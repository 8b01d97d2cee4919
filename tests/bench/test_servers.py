"""The server comparison's pieces: its CPU reading, its summary and the rule that keeps a
server."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from bench.servers import GUARANTEES, cpu_seconds, summary, verdict


def run(server: str, cpu: float, p99: float, rate: float = 200.0) -> dict[str, Any]:
    return {
        "app": "gateway",
        "server": server,
        "rate": rate,
        "server_cpu_us_per_request": cpu,
        "latency_ms": {"p50": p99 / 4, "p99": p99},
        "error_rate": 0.0,
    }


def test_cpu_seconds_reads_this_process_and_grows_with_work() -> None:
    before = cpu_seconds(os.getpid())
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    assert cpu_seconds(os.getpid()) - before >= 0.03


def test_summary_takes_the_median_per_app_server_and_rate() -> None:
    runs = [run("uvicorn", cpu, 5.0) for cpu in (100.0, 300.0, 200.0)]
    runs.append(run("uvicorn", 900.0, 9.0, rate=400.0))
    table = summary(runs)
    assert table["gateway/uvicorn@200"]["cpu_us_per_request"] == 200.0
    assert table["gateway/uvicorn@200"]["rounds"] == 3
    assert table["gateway/uvicorn@400"]["cpu_us_per_request"] == 900.0


@pytest.mark.parametrize(("granian_cpu", "kept"), [(150.0, "uvicorn"), (250.0, "uvicorn")])
def test_a_cheaper_server_is_kept_only_if_it_holds_every_guarantee(
    granian_cpu: float, kept: str
) -> None:
    table = summary([run("uvicorn", 200.0, 5.0), run("granian", granian_cpu, 5.0)])
    found = verdict(table, 200.0)
    assert found.endswith(f"{kept} kept")
    assert f"= {granian_cpu / 200.0:.2f}" in found


def test_a_cheaper_server_holding_every_guarantee_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "bench.servers.GUARANTEES", {name: (True, how) for name, (_, how) in GUARANTEES.items()}
    )
    table = summary([run("uvicorn", 200.0, 5.0), run("granian", 150.0, 5.0)])
    assert verdict(table, 200.0).endswith("granian kept")
    assert verdict(summary([run("uvicorn", 200.0, 5.0)]), 200.0).endswith("uvicorn kept")
