"""The span tree built from a real request's trace, read back from the in-memory exporter:
stages under ``gateway``, subtasks under ``execute``, attempts under their subtask, the
attributes the issue asks for, the caller's ``traceparent`` honoured, and the exporting task
asleep while nothing is queued."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from hybridinfer.control.plane import ControlPlane
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings
from tests.conftest import auth
from tests.fakes import deployment, node, recording_node
from tests.peers import serve_asgi

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def sample_ratio() -> float:
    return 0.1


@pytest.fixture
async def traced(
    settings: Settings, sample_ratio: float
) -> AsyncIterator[tuple[ControlPlane, httpx.AsyncClient]]:
    update = {"otel_exporter": "memory", "otel_sample_ratio": sample_ratio}
    plane = ControlPlane(settings.model_copy(update=update))
    app = create_app(plane)
    await plane.start()
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            yield plane, client
    finally:
        await plane.stop()


def exported(plane: ControlPlane) -> list[ReadableSpan]:
    telemetry = plane.telemetry
    assert telemetry is not None
    plane.traces.settle()  # a request's trace is recorded just after its answer is written
    telemetry.flush()
    assert isinstance(telemetry.exporter, InMemorySpanExporter)
    return list(telemetry.exporter.get_finished_spans())


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


async def test_a_request_becomes_a_span_tree_in_the_callers_trace(
    traced: tuple[ControlPlane, httpx.AsyncClient],
) -> None:
    plane, client = traced
    headers = {**auth(), "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
    body = {"task": "sentiment", "inputs": {"text": "what a wonderful day"}}
    response = await client.post("/v1/infer", json=body, headers=headers)
    assert response.status_code == 200, response.text
    request_id = response.json()["request_id"]
    spans = exported(plane)
    (root,) = [s for s in spans if s.name == "gateway"]
    assert root.context is not None
    assert root.parent is not None
    assert f"{root.context.trace_id:032x}" == CALLER_TRACE
    assert f"{root.parent.span_id:016x}" == CALLER_SPAN
    assert root.parent.is_remote
    assert {s.context.trace_id for s in spans if s.context} == {root.context.trace_id}
    assert root.attributes is not None
    assert root.attributes["hybridinfer.request_id"] == request_id
    assert root.attributes["hybridinfer.status"] == "ok"
    assert root.attributes["hybridinfer.policy_version"] == response.headers["X-Hybridinfer-Policy"]
    stages = {s.name: s for s in children(spans, root)}
    assert list(stages) == ["decompose", "route", "execute", "aggregate"]
    assert root.start_time is not None
    assert root.end_time is not None
    for stage in stages.values():  # stages sit inside the request, in order
        assert stage.start_time is not None
        assert stage.end_time is not None
        assert root.start_time <= stage.start_time <= stage.end_time <= root.end_time
    assert stages["decompose"].end_time <= stages["route"].start_time  # type: ignore[operator]
    (subtask,) = children(spans, stages["execute"])
    assert subtask.attributes is not None
    answer = response.json()["subtasks"][0]
    for name in ("tier", "node", "model", "reason", "status"):
        assert subtask.attributes[f"hybridinfer.{name}"] == answer[name], name
    assert subtask.attributes["hybridinfer.request_id"] == request_id
    stored = (await client.get(f"/v1/traces/{request_id}", headers=auth())).json()
    (decision,) = stored["decisions"]
    assert subtask.attributes["hybridinfer.policy_version"] == decision["policy_version"]
    assert subtask.attributes["hybridinfer.reason"] == decision["reason"]
    (attempt,) = children(spans, subtask)
    assert attempt.name == "attempt primary"
    assert attempt.attributes is not None
    assert attempt.attributes["hybridinfer.node"] == answer["node"]
    assert attempt.attributes["hybridinfer.model"] == answer["model"]
    assert attempt.attributes["hybridinfer.status"] == "ok"
    assert subtask.start_time <= attempt.start_time <= attempt.end_time  # type: ignore[operator]
    assert dict(root.resource.attributes)["service.name"] == "hybridinfer-gateway"


async def test_a_failed_request_is_an_error_span_and_a_new_trace_without_a_caller(
    traced: tuple[ControlPlane, httpx.AsyncClient],
) -> None:
    plane, client = traced
    body = {"task": "sentiment", "inputs": {"text": "fine"}, "options": {"route": "edge"}}
    response = await client.post("/v1/infer", json=body, headers=auth())
    assert response.status_code == 503, response.text
    (root,) = [s for s in exported(plane) if s.name == "gateway"]
    assert root.parent is None
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes is not None
    assert root.attributes["hybridinfer.error_code"] == response.json()["error"]["code"]
    trace = (
        await client.get(f"/v1/traces/{response.json()['error']['request_id']}", headers=auth())
    ).json()
    assert root.context is not None
    assert trace["trace_id"] == f"{root.context.trace_id:032x}"


async def test_an_unsampled_caller_exports_nothing(
    traced: tuple[ControlPlane, httpx.AsyncClient],
) -> None:
    plane, client = traced
    headers = {**auth(), "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-00"}
    body = {"task": "sentiment", "inputs": {"text": "fine"}}
    assert (await client.post("/v1/infer", json=body, headers=headers)).status_code == 200
    assert exported(plane) == []


@pytest.mark.parametrize("sample_ratio", [0.0, 1.0])
async def test_without_a_caller_ok_requests_follow_the_ratio_and_failures_always_export(
    traced: tuple[ControlPlane, httpx.AsyncClient], sample_ratio: float
) -> None:
    plane, client = traced
    body = {"task": "sentiment", "inputs": {"text": "fine"}}
    for _ in range(5):
        assert (await client.post("/v1/infer", json=body, headers=auth())).status_code == 200
    failed = {**body, "options": {"route": "edge"}}
    assert (await client.post("/v1/infer", json=failed, headers=auth())).status_code == 503
    roots = [s for s in exported(plane) if s.name == "gateway"]
    statuses = sorted(str((s.attributes or {})["hybridinfer.status"]) for s in roots)
    assert statuses == (["error"] if sample_ratio == 0.0 else ["error", *["ok"] * 5])


async def test_a_retry_is_a_second_attempt_span_with_its_try_number(
    traced: tuple[ControlPlane, httpx.AsyncClient],
) -> None:
    plane, client = traced
    seen: list[dict[str, str]] = []
    with serve_asgi(recording_node(seen, failures=1)) as url:
        edge = node(
            "edge-1", Tier.EDGE, Zone.PRIVATE, deployment("edge-1", "m", quality=0.9, latency_ms=5)
        )
        edge.url = url
        plane.registry.add(edge)
        body = {"task": "sentiment", "inputs": {"text": "hi"}, "options": {"route": "edge"}}
        headers = {**auth(), "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
        response = await client.post("/v1/infer", json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert len(seen) == 2
    first, second = sorted(
        (s for s in exported(plane) if s.name == "attempt primary"), key=lambda s: s.start_time or 0
    )
    assert first.status.status_code is StatusCode.ERROR
    assert (first.attributes or {})["hybridinfer.status"] == "error"
    assert "hybridinfer.try" not in (first.attributes or {})
    assert (second.attributes or {})["hybridinfer.try"] == 2
    assert (second.attributes or {})["hybridinfer.status"] == "ok"
    assert second.status.status_code is StatusCode.UNSET
    assert first.parent == second.parent  # both under the subtask's span


async def test_a_quiet_exporter_sleeps_until_a_trace_comes(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No tick while nothing is queued (an idle gateway's wake-ups are its CPU); a trace that
    comes is exported within ``WRITE_AFTER_S``."""
    from hybridinfer.core.trace import Trace
    from hybridinfer.observe import telemetry as module

    timeouts: list[float] = []

    class Counting:
        def __getattr__(self, name: str) -> object:
            return getattr(asyncio, name)

        def timeout(self, delay: float) -> asyncio.Timeout:
            timeouts.append(delay)
            return asyncio.timeout(delay)

    monkeypatch.setattr(module, "asyncio", Counting())
    monkeypatch.setattr(module, "WRITE_AFTER_S", 0.05)
    telemetry = module.Telemetry(settings.model_copy(update={"otel_exporter": "memory"}))
    assert isinstance(telemetry.exporter, InMemorySpanExporter)
    telemetry.start()
    try:
        await asyncio.sleep(0.3)
        assert timeouts == []  # asleep on the queue, no timer
        trace = Trace(request_id="quiet", task="sentiment")
        trace.finish("error")  # not ok: always exported
        came = time.monotonic()
        telemetry.observe(trace)
        while not telemetry.exporter.get_finished_spans():  # noqa: ASYNC110 -- the exporter's list
            await asyncio.sleep(0.005)
        assert time.monotonic() - came < 0.5
        assert timeouts == [0.05]
    finally:
        await telemetry.stop()
