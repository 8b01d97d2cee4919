"""The benchmark document and figures, written from a small sample of ``latest.json``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from bench.plots import draw_all
from bench.report import render

from bench import run_all


def latency(p50: float, p99: float) -> dict[str, float]:
    return {"p50": p50, "p95": (p50 + p99) / 2, "p99": p99}


def fixed(target: str, rate: float, p50: float, p99: float, errors: float = 0.0) -> dict[str, Any]:
    return {
        "target": target,
        "rate": rate,
        "latency_ms": latency(p50, p99),
        "error_rate": errors,
        "generator_cpu": 0.05,
    }


def added(target: str, rate: float, p50: float, p99: float, sustained: bool) -> dict[str, Any]:
    return {"target": target, "rate": rate, "sustained": sustained, **latency(p50, p99)}


def searched(rps: float, failed: float | None) -> dict[str, Any]:
    step = {"rate": rps, "sustained": True, "generator_cpu": 0.2}
    return {"sustained_rps": rps, "first_failed_rps": failed, "steps": [step]}


GATEWAY = {
    "litellm_version": "1.108.7",
    "fixed_rates": [
        fixed("direct", 30, 0.4, 1.0),
        fixed("hybridinfer", 30, 1.1, 4.0),
        fixed("litellm", 30, 14.0, 30.0),
        fixed("direct", 300, 0.4, 2.0),
        fixed("hybridinfer", 300, 1.2, 6.0),
        fixed("litellm", 300, 3000.0, 4800.0, errors=0.3),
    ],
    "added_ms": [
        added("hybridinfer", 30, 0.7, 2.5, True),
        added("litellm", 30, 13.6, 29.0, True),
        added("hybridinfer", 300, 0.8, 4.0, True),
        added("litellm", 300, 2999.6, 4798.0, False),
    ],
    "sustained": {
        "direct": searched(6400, 7680),
        "hybridinfer": searched(640, 960),
        "litellm": searched(40, 60),
    },
}
SAMPLE: dict[str, Any] = {
    "machine": {
        "date": "2026-11-29T23:30:00+00:00",
        "cores": 2,
        "platform": "Linux-test",
        "versions": {"hybridinfer": "0.1.0", "python": "3.11.7", "litellm": "1.108.7"},
    },
    "total_seconds": 840.0,
    "sections": {
        "gateway_overhead": {"title": "Gateway overhead", "status": "ok", "result": GATEWAY},
        "routing": {
            "title": "MMLU deferral curves",
            "status": "ok",
            "result": {
                "data": {"rows": 14042, "subjects": 57},
                "protocol": {"outer_folds": 5},
                "mean": {
                    name: {"apgr": apgr, "cpt50": 0.4, "cpt80": 0.7, "strong_share_at_95": 0.5}
                    for name, apgr in (("random", 0.5), ("length", 0.52), ("learned", 0.6))
                },
            },
        },
        "llm": {"title": "LLM TTFT", "status": "failed", "error": "exit 1"},
        "failover": {
            "title": "Failover on a cloud cut",
            "status": "pending",
            "result": {"status": "pending", "reason": "no cut scenario yet", "rows": {}},
        },
    },
}


def test_each_target_is_stated_with_its_verdict(tmp_path: Path) -> None:
    document = render(SAMPLE, {}, tmp_path / "benchmarks.md")
    lines = document.splitlines()
    row = next(line for line in lines if line.startswith("| hybridinfer added latency at 300"))
    assert "p50 0.80 ms, p99 4.00 ms" in row
    assert row.endswith("**met** |")
    row = next(line for line in lines if line.startswith("| added latency ≤ 1/10"))
    assert "30 RPS" in row
    assert "300 RPS" not in row
    assert row.endswith("**met** |")  # 0.7 <= 1.36 and 2.5 <= 2.9
    row = next(line for line in lines if line.startswith("| sustained rate ≥ 10x"))
    assert "640 vs 40 RPS (16.0x)" in row
    assert row.endswith("**met** |")
    row = next(line for line in lines if line.startswith("| APGR"))
    assert "0.600" in row
    assert row.endswith("**missed** |")
    assert "Not measured in this run: exit 1." in document
    assert "Not measured in this run: no cut scenario yet." in document
    assert "2 cores" in document
    assert "litellm 1.108.7" in document


def test_a_target_missed_at_p99_is_missed(tmp_path: Path) -> None:
    sample = copy.deepcopy(SAMPLE)
    gateway = sample["sections"]["gateway_overhead"]["result"]
    gateway["added_ms"][0]["p99"] = 3.5  # more than a tenth of LiteLLM's 29 ms
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    row = next(line for line in lines if line.startswith("| added latency ≤ 1/10"))
    assert row.endswith("**missed** |")


@pytest.mark.integration
def test_figures_are_drawn_and_linked(tmp_path: Path) -> None:
    figures = draw_all(SAMPLE, tmp_path)
    assert set(figures) == {"gateway_overhead"}
    assert figures["gateway_overhead"].read_bytes().startswith(b"\x89PNG")
    (tmp_path / "docs").mkdir()
    document = render(SAMPLE, figures, tmp_path / "docs" / "benchmarks.md")
    assert "](../gateway_overhead.png)" in document


def test_a_result_of_another_shape_is_said_not_rendered(tmp_path: Path) -> None:
    sample = copy.deepcopy(SAMPLE)
    sample["sections"]["cascade"] = {"title": "Cascades", "status": "ok", "result": {"rows": []}}
    document = render(sample, {}, tmp_path / "benchmarks.md")
    assert "Could not render this section's result: KeyError: 'results'." in document


def test_without_a_sustained_fixed_rate_the_shared_search_rates_are_compared(
    tmp_path: Path,
) -> None:
    sample = copy.deepcopy(SAMPLE)
    gateway = sample["sections"]["gateway_overhead"]["result"]
    for row in gateway["added_ms"]:
        row["sustained"] = row["target"] != "litellm"
    steps = {"direct": (0.5, 2.0), "hybridinfer": (1.0, 3.0), "litellm": (20.5, 42.0)}
    for name, (p50, p99) in steps.items():
        gateway["sustained"][name]["steps"] = [
            {"rate": 10, "sustained": True, "p50_ms": p50, "p99_ms": p99, "generator_cpu": 0.01}
        ]
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    row = next(line for line in lines if line.startswith("| added latency ≤ 1/10"))
    assert "10 RPS: p50 0.50 vs 20.00 ms, p99 1.00 vs 40.00 ms" in row
    assert row.endswith("**met** |")


def test_a_rerun_of_some_sections_replaces_only_those_and_keeps_the_dates() -> None:
    earlier = {
        "machine": {"date": "2026-11-30T10:00:00+00:00"},
        "total_seconds": 900.0,
        "sections": {"routing": {"status": "ok", "seconds": 60}, "gateway_overhead": {"old": 1}},
    }
    rerun = {
        "machine": {"date": "2026-12-02T01:00:00+00:00"},
        "total_seconds": 300.0,
        "sections": {"gateway_overhead": {"date": "2026-12-02T01:00:00+00:00", "new": 1}},
    }
    latest = run_all.merged(rerun, earlier)
    assert latest["sections"]["gateway_overhead"] == rerun["sections"]["gateway_overhead"]
    assert latest["sections"]["routing"]["date"] == "2026-11-30T10:00:00+00:00"
    assert list(latest["sections"]) == ["routing", "gateway_overhead"]  # the document's order
    assert latest["machine"]["date"] == "2026-12-02T01:00:00+00:00"
