from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from hybridinfer.backends.base import Backend
from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import Deployment, Node
from hybridinfer.core.trace import Trace
from hybridinfer.errors import HybridInferError, UpstreamError, UpstreamRejected
from hybridinfer.execute.retry import Retries
from hybridinfer.execute.streaming import StreamExecutor
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from tests.fakes import hybrid_registry


class FlakyStream(Backend):
    """Streams two tokens, after failing the first ``failures`` calls of each node."""

    protocol = "fake"

    def __init__(self, failures: Mapping[str, HybridInferError | None]) -> None:
        self.failures = dict(failures)
        self.calls: list[str] = []

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def infer_stream(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(node.id)
        error = self.failures.pop(node.id, None)
        if error is not None:
            raise error
        for token in ("hel", "lo"):
            yield {"delta": {"content": token}, "finish_reason": None, "usage": None}
        yield {"delta": {}, "finish_reason": "stop", "usage": None}


async def start(backend: FlakyStream) -> tuple[str, Trace]:
    signals = Signals()
    policy = compile_policy("version: t")
    router = Router(hybrid_registry(), signals, lambda: policy)
    subtask = Subtask("classify", "text-classification", "sentiment", {"text": "hi"})
    decision = router.decide(subtask, router.context(RouteOptions(prefer="quality")))
    streamer = StreamExecutor({"onnx": backend, "v2": backend}, signals, retry=Retries(2, 0.001))
    trace = Trace(request_id="r")
    stream = await streamer.start(subtask, decision, {}, trace, time.monotonic() + 5.0)
    text = "".join([piece["delta"].get("content") or "" async for piece in stream])
    return text, trace


async def test_a_503_before_the_first_token_is_retried_on_the_same_deployment() -> None:
    backend = FlakyStream({"cloud-1": UpstreamError("HTTP 503", upstream_status=503)})
    text, trace = await start(backend)
    assert text == "hello"
    assert [(a.node, a.number, a.status) for a in trace.attempts] == [
        ("cloud-1", 1, "error"),
        ("cloud-1", 2, "ok"),
    ]


async def test_a_4xx_before_the_first_token_falls_back_without_a_retry() -> None:
    backend = FlakyStream({"cloud-1": UpstreamRejected("HTTP 400", upstream_status=400)})
    text, trace = await start(backend)
    assert text == "hello"
    assert backend.calls == ["cloud-1", "edge-1"]
    assert [a.role for a in trace.attempts] == ["primary", "fallback"]
