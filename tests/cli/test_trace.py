"""``hybridinfer trace``: the tree of a real request read from a real gateway process, and
how rejected candidates, retries, failed attempts and errors are drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from hybridinfer.cli import main
from hybridinfer.cli.trace import render_trace
from tests.conftest import ADMIN_KEY, auth
from tests.peers import gateway_process


@pytest.mark.integration
def test_the_tree_of_a_real_request_shows_plan_decision_timings_and_attempt(
    tmp_path: Path, models_dir: Path
) -> None:
    with gateway_process(tmp_path / "gw", models_dir, ADMIN_KEY, log_level="warning") as (url, _):
        body = {"task": "sentiment", "inputs": {"text": "a calm and lovely evening"}}
        request_id = httpx.post(f"{url}/v1/infer", json=body, headers=auth(), timeout=30).json()[
            "request_id"
        ]
        trace = httpx.get(f"{url}/v1/traces/{request_id}", headers=auth(), timeout=10).json()
        result = CliRunner().invoke(main, ["trace", request_id, "--url", url, "--key", ADMIN_KEY])
        missing = CliRunner().invoke(main, ["trace", "nope", "--url", url, "--key", ADMIN_KEY])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"request {request_id}  task=sentiment  status=ok")
    assert f"trace_id={trace['trace_id']}" in lines[0]
    stages = [line for line in lines if line[:3] in ("├─ ", "└─ ")]
    assert [line.split()[1] for line in stages] == [
        "gateway",
        "decompose",
        "route",
        "execute",
        "aggregate",
    ]
    timings = trace["timings_ms"]
    for line in stages:
        assert f"{timings[line.split()[1]]:.2f} ms" in line
    (decision,) = trace["decisions"]
    text = result.output
    assert decision["reason"] in text
    assert f"✓ {decision['chosen']}" in text
    (attempt,) = trace["attempts"]
    assert f"{attempt['subtask']}: primary local/local/{attempt['model']} ok" in text
    assert f"{attempt['subtask']}: ok" in text  # the outcome under aggregate
    assert missing.exit_code == 1
    assert "no trace with this request id" in missing.output


def test_rejections_retries_failures_and_errors_are_drawn() -> None:
    candidate: dict[str, Any] = {"tier": "cloud", "zone": "public", "quality": 0.8}
    trace: dict[str, Any] = {
        "request_id": "r1",
        "task": "sentiment",
        "status": "error",
        "timings_ms": {"gateway": 0.1, "route": 0.2, "execute": 9.0, "total": 9.5},
        "offsets_ms": {"route": 0.3},
        "plan": {
            "results": [{"id": "s1", "status": "error", "error": {"code": "x", "message": "y"}}]
        },
        "decisions": [
            {
                "subtask": "s1",
                "chosen": "cloud-1/big:1",
                "tier": "cloud",
                "policy_version": "p1",
                "reason": "the only one left",
                "fallbacks": ["edge-1/small:1"],
                "cascade": None,
                "candidates": [
                    {**candidate, "deployment": "cloud-1/big:1", "score": 1.0, "rejected_by": None},
                    {
                        **candidate,
                        "deployment": "local/small:1",
                        "score": None,
                        "rejected_by": "privacy",
                        "detail": "sensitive stays private",
                    },
                ],
            }
        ],
        "attempts": [
            {
                "subtask": "s1",
                "role": "primary",
                "tier": "cloud",
                "node": "cloud-1",
                "model": "big",
                "status": "error",
                "latency_ms": 4.0,
                "started_ms": 0.6,
                "number": 2,
                "wait_ms": 50.0,
                "error_code": "upstream_unavailable",
                "error": "connection refused",
            }
        ],
        "error": {"code": "upstream_unavailable", "message": "every deployment failed"},
    }
    text = "\n".join(render_trace(trace))
    assert "✗ local/small:1 (cloud/public) rejected by privacy: sensitive stays private" in text
    assert "fallbacks: edge-1/small:1" in text
    assert "try=2 after 50.00 ms backoff" in text
    assert "error=upstream_unavailable: connection refused" in text
    assert "route 0.20 ms (at 0.30 ms)" in text
    assert text.splitlines()[-1] == "   └─ error upstream_unavailable: every deployment failed"
