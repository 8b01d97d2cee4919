"""W3C trace context: which ``traceparent`` headers are honoured, and the one a remote node
receives when the gateway calls it (a real HTTP node that records its request headers)."""

from __future__ import annotations

import httpx
import pytest

from hybridinfer.control.plane import ControlPlane
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.core.tracecontext import new_context, parse_traceparent
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings
from tests.conftest import auth
from tests.fakes import deployment, node, recording_node
from tests.peers import serve_asgi

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (f"00-{TRACE}-{SPAN}-01", (int(TRACE, 16), int(SPAN, 16), True)),
        (f"00-{TRACE}-{SPAN}-00", (int(TRACE, 16), int(SPAN, 16), False)),
        (f" 00-{TRACE.upper()}-{SPAN}-01 ", (int(TRACE, 16), int(SPAN, 16), True)),
        (f"01-{TRACE}-{SPAN}-01-later-fields", (int(TRACE, 16), int(SPAN, 16), True)),
        (f"ff-{TRACE}-{SPAN}-01", None),
        (f"00-{'0' * 32}-{SPAN}-01", None),
        (f"00-{TRACE}-{'0' * 16}-01", None),
        (f"00-{TRACE}-{SPAN}-01-extra", None),
        (f"00-{TRACE[:-1]}-{SPAN}-01", None),
        ("garbage", None),
        (None, None),
    ],
)
def test_traceparent_is_read_as_w3c_trace_context_says(
    header: str | None, expected: tuple[int, int, bool] | None
) -> None:
    assert parse_traceparent(header) == expected


def test_a_new_context_joins_the_callers_trace_with_a_span_of_its_own() -> None:
    joined = new_context(f"00-{TRACE}-{SPAN}-01")
    assert joined.trace_id_hex == TRACE
    assert joined.parent_span_id == int(SPAN, 16)
    assert joined.span_id not in (0, int(SPAN, 16))
    assert joined.traceparent(joined.span_id) == f"00-{TRACE}-{joined.span_id:016x}-01"
    fresh = new_context("not a traceparent")
    assert fresh.parent_span_id is None
    assert fresh.trace_id != joined.trace_id


async def test_the_gateway_forwards_its_span_as_traceparent_to_remote_nodes(
    settings: Settings,
) -> None:
    seen: list[dict[str, str]] = []
    plane = ControlPlane(settings.model_copy(update={"otel_exporter": "memory"}))
    app = create_app(plane)
    await plane.start()
    try:
        with serve_asgi(recording_node(seen)) as url:
            edge = node(
                "edge-1",
                Tier.EDGE,
                Zone.PRIVATE,
                deployment("edge-1", "m", quality=0.9, latency_ms=5),
            )
            edge.url = url
            plane.registry.add(edge)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
                response = await client.post(
                    "/v1/infer",
                    json={
                        "task": "sentiment",
                        "inputs": {"text": "hi"},
                        "options": {"route": "edge"},
                    },
                    headers={**auth(), "traceparent": f"00-{TRACE}-{SPAN}-01"},
                )
        assert response.status_code == 200, response.text
        assert response.json()["subtasks"][0]["node"] == "edge-1"
        (headers,) = seen
        version, trace_id, parent, flags = headers["traceparent"].split("-")
        assert (version, trace_id, flags) == ("00", TRACE, "01")
        assert plane.telemetry is not None
        plane.traces.settle()  # the trace is recorded just after the answer is written
        plane.telemetry.flush()
        spans = plane.telemetry.exporter.get_finished_spans()  # type: ignore[attr-defined]
        (root,) = [s for s in spans if s.name == "gateway"]
        assert f"{root.context.span_id:016x}" == parent  # the node's spans hang under gateway
    finally:
        await plane.stop()
