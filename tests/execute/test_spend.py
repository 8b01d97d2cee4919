"""Paid calls are charged once, plain or streamed, and given back when no answer came."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from hybridinfer.backends.base import Backend
from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import Deployment, Node, Tier, Zone
from hybridinfer.core.trace import Trace
from hybridinfer.errors import BudgetExhausted, UpstreamUnavailable
from hybridinfer.execute.spend import SpendGuard
from hybridinfer.execute.streaming import StreamExecutor
from hybridinfer.policy.document import BudgetPolicy, compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.budget import MemoryLedger
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from tests.fakes import deployment, node

ONE_CALL = BudgetPolicy(global_limit=0.0015)


class StreamingFake(Backend):
    protocol = "openai"

    def __init__(self) -> None:
        self.fail = False

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def infer_stream(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> AsyncIterator[dict[str, Any]]:
        if self.fail:
            raise UpstreamUnavailable("refused")
        yield {"delta": {"content": "hi"}, "finish_reason": None, "usage": None}
        yield {"delta": {}, "finish_reason": "stop", "usage": None}


async def test_spend_guard_reserves_refunds_and_refuses() -> None:
    guard = SpendGuard(MemoryLedger(), lambda: ONE_CALL)
    await guard.reserve("k", 0.001)
    with pytest.raises(BudgetExhausted):
        await guard.reserve("k", 0.001)
    await guard.refund("k", 0.001)
    await guard.reserve("k", 0.001)
    await guard.reserve("k", 0.0)  # free calls are never refused


async def test_streamed_cloud_chat_is_charged_and_refunded_when_no_token_came() -> None:
    registry = NodeRegistry()
    cloud = node(
        "llm-cloud",
        Tier.CLOUD,
        Zone.PUBLIC,
        deployment("llm-cloud", "big", quality=0.5, latency_ms=5, cost=0.001, task="chat"),
    )
    cloud.protocol = "openai"
    registry.add(cloud)
    policy = compile_policy("version: s")
    router = Router(registry, Signals(), lambda: policy)
    chat = Subtask(id="generate", capability="text-classification", task="chat", inputs={})
    decision = router.decide(chat, router.context(RouteOptions()))
    backend = StreamingFake()
    ledger = MemoryLedger()
    streamer = StreamExecutor({"openai": backend}, Signals(), SpendGuard(ledger, lambda: ONE_CALL))
    deadline = time.monotonic() + 5

    backend.fail = True
    with pytest.raises(UpstreamUnavailable):
        await streamer.start(chat, decision, {}, Trace(request_id="a", key_id="k"), deadline)
    assert ledger.state("k", ONE_CALL).spent_global == 0.0  # refunded: nothing was answered

    backend.fail = False
    stream = await streamer.start(chat, decision, {}, Trace(request_id="b", key_id="k"), deadline)
    assert [piece async for piece in stream]
    assert ledger.state("k", ONE_CALL).spent_global == pytest.approx(0.001)
    with pytest.raises(BudgetExhausted):
        await streamer.start(chat, decision, {}, Trace(request_id="c", key_id="k"), deadline)
