"""The one request path: decompose → route → execute → aggregate, each request's trace
recorded whichever way it ends. Fake backends on a private-zone topology (local and edge)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hybridinfer.core.schemas import InferOptions, InferRequest
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.core.trace import Trace
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import parse_rules
from hybridinfer.errors import (
    DeadlineExceeded,
    InvalidRequest,
    UnknownTask,
    UpstreamUnavailable,
)
from hybridinfer.execute.executor import Executor
from hybridinfer.pipeline.pipeline import Pipeline
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.router import Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink
from tests.fakes import Outcome, SequenceBackend, deployment, node

RULES = """
version: 1
tasks:
  sentiment:
    inputs: {text: {type: string}}
    subtasks:
      - {id: classify, capability: text-classification, task: sentiment,
         inputs: {text: $inputs.text}}
    outputs: {label: $classify.label, confidence: $classify.confidence}
  annotated:
    inputs: {text: {type: string}}
    subtasks:
      - {id: classify, capability: text-classification, task: sentiment,
         inputs: {text: $inputs.text}}
      - {id: caption, capability: captioning, inputs: {text: $inputs.text}, soft: true}
    outputs: {label: $classify.label, caption: $caption.caption}
  guarded:
    inputs: {text: {type: string}}
    subtasks:
      - {id: redact, capability: text-classification, task: sentiment,
         inputs: {text: $inputs.text}, stays_local: true}
      - {id: classify, capability: text-classification, task: sentiment,
         inputs: {text: $redact.label}, depends_on: [redact]}
    outputs: {label: $classify.label}
  quick:
    timeout_ms: 50
    inputs: {text: {type: string}}
    subtasks:
      - {id: classify, capability: text-classification, task: sentiment,
         inputs: {text: $inputs.text}}
    outputs: {label: $classify.label}
"""


def private_registry() -> NodeRegistry:
    """A local small model and an edge medium one, both in the private zone."""
    registry = NodeRegistry()
    local = deployment("local", "small", quality=0.75, latency_ms=0.3)
    edge = deployment("edge-1", "medium", quality=0.76, latency_ms=3.0)
    registry.add(node("local", Tier.LOCAL, Zone.PRIVATE, local))
    registry.add(node("edge-1", Tier.EDGE, Zone.PRIVATE, edge))
    return registry


def pipeline(
    tmp_path: Path, script: dict[str, list[Outcome]], request_timeout_ms: int = 5_000
) -> tuple[Pipeline, TraceSink, SequenceBackend]:
    backend = SequenceBackend(script)
    signals = Signals()
    policy = compile_policy("version: t")
    router = Router(private_registry(), signals, lambda: policy)
    executor = Executor({"onnx": backend, "v2": backend}, signals)
    sink = TraceSink(SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"))
    decomposer = Decomposer(parse_rules(RULES))
    return Pipeline(decomposer, router, executor, sink, request_timeout_ms), sink, backend


def request(task: str, text: str = "a fine day", **options: object) -> InferRequest:
    return InferRequest(task=task, inputs={"text": text}, options=InferOptions(**options))


async def test_an_answer_carries_outputs_subtasks_and_timings_and_its_trace_is_kept(
    tmp_path: Path,
) -> None:
    served, sink, backend = pipeline(tmp_path, {"local": [0.9]})
    trace = Trace("r1")

    body = await served.infer(request("sentiment"), trace)

    assert body["request_id"] == "r1"
    assert body["status"] == "ok"
    assert body["outputs"] == {"label": "from-local", "confidence": 0.9}
    (subtask,) = body["subtasks"]
    assert (subtask["id"], subtask["node"], subtask["status"]) == ("classify", "local", "ok")
    assert set(body["timings_ms"]) >= {"decompose", "route", "execute", "aggregate", "total"}
    assert backend.calls == ["local"]
    (kept,) = sink.latest()
    assert (kept["request_id"], kept["status"], kept["task"]) == ("r1", "ok", "sentiment")
    assert kept["decisions"][0]["chosen"] == "local/small:1"
    assert kept["plan"]["results"][0]["model"] == "small"


async def test_a_failed_hard_subtask_fails_the_request_and_records_why(tmp_path: Path) -> None:
    down = UpstreamUnavailable("node down")
    served, sink, _ = pipeline(tmp_path, {"local": [down], "edge-1": [down]})
    trace = Trace("r2")

    with pytest.raises(UpstreamUnavailable):
        await served.infer(request("sentiment"), trace)

    (kept,) = sink.latest()
    assert kept["status"] == "error"
    assert kept["error"] == {"code": down.error_code, "message": "node down"}
    assert trace.timings_ms["total"] > 0.0


async def test_a_soft_subtask_nothing_can_place_makes_the_answer_partial(tmp_path: Path) -> None:
    served, _, _ = pipeline(tmp_path, {"local": [0.8]})

    body = await served.infer(request("annotated"), Trace("r3"))

    assert body["status"] == "partial"
    assert body["outputs"] == {"label": "from-local"}  # no caption, and no error either
    caption = next(s for s in body["subtasks"] if s["id"] == "caption")
    assert caption["status"] == "error"
    assert caption["node"] is None


async def test_an_unknown_task_fails_before_routing_and_is_recorded(tmp_path: Path) -> None:
    served, sink, backend = pipeline(tmp_path, {"local": [0.8]})
    with pytest.raises(UnknownTask):
        await served.infer(request("translate"), Trace("r4"))
    assert backend.calls == []
    assert sink.latest()[0]["error"]["code"] == "unknown_task"


async def test_a_forced_route_leaves_stays_local_steps_on_the_local_tier(tmp_path: Path) -> None:
    served, _, backend = pipeline(tmp_path, {"local": [0.8], "edge-1": [0.7]})

    body = await served.infer(request("guarded", route="edge"), Trace("r5"))

    placed = {s["id"]: s["node"] for s in body["subtasks"]}
    assert placed == {"redact": "local", "classify": "edge-1"}
    assert backend.calls == ["local", "edge-1"]
    assert body["outputs"] == {"label": "from-edge-1"}


async def test_a_pinned_model_decides_where_every_step_runs(tmp_path: Path) -> None:
    served, _, backend = pipeline(tmp_path, {"local": [0.8], "edge-1": [0.7]})
    trace = Trace("r6")

    body = await served.infer(request("sentiment", model="medium"), trace)

    assert body["subtasks"][0]["model"] == "medium"
    assert backend.calls == ["edge-1"]
    rejected = {c["deployment"]: c["rejected_by"] for c in trace.decisions[0]["candidates"]}
    assert rejected["local/small:1"] == "model"


async def test_an_auto_request_says_which_task_it_became(tmp_path: Path) -> None:
    served, _, _ = pipeline(tmp_path, {"local": [0.8]})
    trace = Trace("r7")

    body = await served.infer(request("auto", "a fine day"), trace)

    assert body["task"] == "sentiment"
    assert trace.task == "sentiment"
    assert trace.plan is not None
    assert trace.plan["auto"] == {"task": "sentiment", "reason": "a short statement"}


@pytest.mark.parametrize(
    ("task", "options", "gateway_ms"),
    [
        ("quick", {"timeout_ms": 10_000}, 10_000),  # the task's ceiling caps the caller's
        ("sentiment", {"timeout_ms": 50}, 10_000),  # the caller's own, below the gateway's
        ("sentiment", {}, 50),  # the gateway's when neither sets one
    ],
)
async def test_the_deadline_is_the_tightest_of_caller_task_and_gateway(
    tmp_path: Path, task: str, options: dict[str, object], gateway_ms: int
) -> None:
    slow: list[Outcome] = [(2.0, 0.9)]
    served, _, _ = pipeline(tmp_path, {"local": slow, "edge-1": slow}, gateway_ms)
    started = time.monotonic()

    with pytest.raises(DeadlineExceeded):
        await served.infer(request(task, **options), Trace("r8"))

    assert time.monotonic() - started < 1.0  # not the 2 s the model would take


async def test_a_gateway_without_a_streamer_refuses_to_stream(tmp_path: Path) -> None:
    served, _, _ = pipeline(tmp_path, {"local": [0.8]})
    with pytest.raises(InvalidRequest, match="does not stream"):
        await served.stream(request("sentiment"), Trace("r9"))
