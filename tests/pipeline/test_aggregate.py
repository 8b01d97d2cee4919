"""Stage ``aggregate``: outputs resolved from subtask results, a soft failure makes the answer
partial, a hard one is the request's error."""

from __future__ import annotations

import pytest

from hybridinfer.core.plan import Plan, Subtask
from hybridinfer.core.trace import Attempt
from hybridinfer.errors import UpstreamUnavailable
from hybridinfer.execute.executor import SubtaskResult
from hybridinfer.pipeline.aggregate import aggregate, summarise

CLASSIFY = Subtask("classify", "text-classification", "sentiment", {})
CAPTION = Subtask("caption", "captioning", None, {}, soft=True)
PLAN = Plan(
    "annotated",
    [CLASSIFY, CAPTION],
    {"label": "$classify.label", "caption": "$caption.caption", "echo": "$inputs.text"},
)


def attempt(node: str) -> Attempt:
    return Attempt("classify", f"{node}/m:1", "edge", node, "m", "primary", latency_ms=2.0)


def test_every_output_is_resolved_when_every_subtask_answered() -> None:
    results = {
        "classify": SubtaskResult(CLASSIFY, "ok", {"label": "positive"}),
        "caption": SubtaskResult(CAPTION, "ok", {"caption": "a seven"}),
    }
    status, outputs = aggregate(PLAN, results, {"text": "hi"})
    assert status == "ok"
    assert outputs == {"label": "positive", "caption": "a seven", "echo": "hi"}


def test_a_failed_soft_subtask_leaves_its_outputs_out_and_the_answer_partial() -> None:
    results = {
        "classify": SubtaskResult(CLASSIFY, "ok", {"label": "positive"}),
        "caption": SubtaskResult(CAPTION, "error", error=UpstreamUnavailable("llm down")),
    }
    status, outputs = aggregate(PLAN, results, {"text": "hi"})
    assert status == "partial"
    assert outputs == {"label": "positive", "echo": "hi"}


def test_a_failed_hard_subtask_raises_its_own_error() -> None:
    failure = UpstreamUnavailable("edge down")
    results = {
        "classify": SubtaskResult(CLASSIFY, "skipped", error=failure),
        "caption": SubtaskResult(CAPTION, "ok", {"caption": "a seven"}),
    }
    with pytest.raises(UpstreamUnavailable) as caught:
        aggregate(PLAN, results, {"text": "hi"})
    assert caught.value is failure


def test_a_summary_says_where_it_ran_and_rounds_its_latency() -> None:
    ran = SubtaskResult(CLASSIFY, "ok", attempt=attempt("edge-1"), reason="cheapest")
    ran.latency_ms = 1.23456
    assert summarise(ran) == {
        "id": "classify",
        "capability": "text-classification",
        "tier": "edge",
        "node": "edge-1",
        "model": "m",
        "role": "primary",
        "status": "ok",
        "latency_ms": 1.235,
        "reason": "cheapest",
    }


def test_a_summary_of_a_degraded_answer_says_why() -> None:
    why = "escalation failed (cloud-1/m: deadline_exceeded); the first answer stands"
    kept = SubtaskResult(CLASSIFY, "ok", attempt=attempt("edge-1"), degraded=why)
    assert summarise(kept)["degraded"] == why
    assert "degraded" not in summarise(SubtaskResult(CLASSIFY, "ok", attempt=attempt("edge-1")))


def test_a_summary_of_a_subtask_that_never_ran_carries_its_error() -> None:
    unplaced = SubtaskResult(CAPTION, "error", error=UpstreamUnavailable("no llm"))
    summary = summarise(unplaced)
    assert (summary["tier"], summary["node"], summary["model"]) == (None, None, None)
    assert summary["error"] == {"code": "upstream_unavailable", "message": "no llm"}
