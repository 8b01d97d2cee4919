from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from hybridinfer.backends import openai
from hybridinfer.backends.base import Backend
from hybridinfer.backends.openai import ANSWER_TOKENS, PROBE_CHAT, OpenAIBackend
from hybridinfer.control.prober import NodeProber, update_rtt
from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration
from hybridinfer.core.topology import Deployment, Node, NodeStatus, PriorSource, Tier, Zone
from hybridinfer.errors import UpstreamUnavailable
from hybridinfer.signals.breaker import Breakers, BreakerState
from hybridinfer.signals.exchanges import ExchangeWindows
from hybridinfer.signals.registry import NodeRegistry, node_from_registration
from tests.fakes import hybrid_registry


class SlowOrDead(Backend):
    """Answers probes after ``delay_s``, or not at all when ``alive`` is False."""

    protocol = "v2"

    def __init__(self) -> None:
        self.delay_s = 0.0
        self.alive = True

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def probe(self, node: Node, timeout_s: float) -> bool:
        await asyncio.sleep(self.delay_s)
        return self.alive


def test_rtt_attacks_fast_and_decays_slowly() -> None:
    assert update_rtt(0.0, 5.0) == 5.0
    assert update_rtt(5.0, 250.0) == 250.0  # one slow probe is enough to see a slow link
    assert update_rtt(250.0, 2.0) == 126.0  # recovery is trusted step by step
    assert update_rtt(126.0, 2.0) == 64.0


async def test_probes_measure_rtt_and_mark_dead_nodes_down() -> None:
    registry = hybrid_registry()
    backend = SlowOrDead()
    prober = NodeProber(registry, {"v2": backend}, interval_s=0.05)
    backend.delay_s = 0.06
    await prober.probe_all()
    cloud = registry.get("cloud-1")
    assert 55.0 <= cloud.rtt_ms < 500.0
    assert cloud.status is NodeStatus.READY
    backend.alive = False
    await prober.probe_all()
    assert cloud.status is NodeStatus.DOWN
    assert registry.get("local").status is NodeStatus.READY  # in-process nodes are not probed
    backend.alive = True
    backend.delay_s = 0.0
    await prober.probe_all()
    assert cloud.status is NodeStatus.READY
    assert cloud.rtt_ms >= 55.0  # the probe that found it back timed the outage, not the path
    await prober.probe_all()
    assert cloud.rtt_ms < 55.0


async def test_an_answering_probe_half_opens_breakers_and_every_probe_is_an_exchange() -> None:
    registry = hybrid_registry()
    backend = SlowOrDead()
    breakers = Breakers(failure_threshold=1, open_seconds=30.0)
    exchanges = ExchangeWindows(window_s=60.0, slow_ms=40.0)
    prober = NodeProber(registry, {"v2": backend}, 0.05, breakers=breakers, exchanges=exchanges)
    backend.delay_s = 0.06  # slow, but it answers: timed, and counted as slow
    await prober.probe_all()
    tail = exchanges.tail("cloud-1")
    assert (tail.count, tail.slow_share) == (1, 1.0)
    assert tail.p95_ms >= 55.0
    breakers.on_result("cloud-1/large:1", UpstreamUnavailable("refused"))
    assert breakers.state("cloud-1/large:1") is BreakerState.OPEN
    rtt_before = registry.get("cloud-1").rtt_ms
    backend.delay_s = 0.2
    await prober.probe_all()
    assert breakers.state("cloud-1/large:1") is BreakerState.HALF_OPEN
    # Out while a breaker was open: it timed the outage, not the path.
    assert registry.get("cloud-1").rtt_ms == rtt_before
    assert exchanges.tail("cloud-1").count == 1


async def test_a_half_open_breaker_that_no_call_tries_does_not_freeze_the_rtt() -> None:
    """A probe answered since the breaker opened: the path is alive, so the next probes time
    it. Otherwise a policy rule that keeps work off a slow link (``network.cloud.rtt_ms``)
    would never send the trial call that closes the breaker, and the RTT it reads would stay
    at its worst for good."""
    registry = hybrid_registry()
    backend = SlowOrDead()
    breakers = Breakers(failure_threshold=1, open_seconds=30.0)
    prober = NodeProber(registry, {"v2": backend}, 0.05, breakers=breakers)
    backend.delay_s = 0.3  # a slow spell: the RTT attacks at once
    await prober.probe_all()
    cloud = registry.get("cloud-1")
    assert cloud.rtt_ms >= 290.0
    breakers.on_result("cloud-1/large:1", UpstreamUnavailable("refused"))
    backend.delay_s = 0.0
    await prober.probe_all()  # out while the breaker was open: untimed, but it half-opens it
    assert breakers.state("cloud-1/large:1") is BreakerState.HALF_OPEN
    assert cloud.rtt_ms >= 290.0
    for _ in range(4):  # no call comes: the breaker stays half-open, the probes time the path
        await prober.probe_all()
    assert breakers.state("cloud-1/large:1") is BreakerState.HALF_OPEN
    assert cloud.rtt_ms < 30.0


async def test_a_probe_out_while_a_breaker_opened_does_not_time_the_path() -> None:
    """The breaker was closed when the probe left and opened while it was out: the probe may
    have waited out the outage that opened it."""
    registry = hybrid_registry()
    breakers = Breakers(failure_threshold=1, open_seconds=0.01)

    class OpensMeanwhile(SlowOrDead):
        async def probe(self, node: Node, timeout_s: float) -> bool:
            await asyncio.sleep(0.02)
            breakers.on_result("cloud-1/large:1", UpstreamUnavailable("refused"))
            await asyncio.sleep(0.05)  # the open spell ends before the answer comes
            return True

    prober = NodeProber(registry, {"v2": OpensMeanwhile()}, 0.05, breakers=breakers)
    await prober.probe_all()
    assert breakers.state("cloud-1/large:1") is BreakerState.HALF_OPEN
    assert registry.get("cloud-1").rtt_ms == 0.0


async def test_a_slow_probe_does_not_hold_the_next_round_of_the_other_nodes() -> None:
    registry = hybrid_registry()

    class EdgeHangs(SlowOrDead):
        async def probe(self, node: Node, timeout_s: float) -> bool:
            if node.id == "edge-1":
                await asyncio.sleep(timeout_s)
                return False
            return True

    prober = NodeProber(registry, {"v2": EdgeHangs()}, interval_s=0.5)
    first = prober._start_round(every=True)
    assert len(first) == 2
    await asyncio.sleep(0.01)
    second = prober._start_round(every=True)  # edge-1's probe is still out: only cloud-1 again
    assert len(second) == 1
    await asyncio.gather(*second)
    assert registry.get("cloud-1").status is NodeStatus.READY
    await prober.stop()


# --- latency priors measured at registration, against a fake OpenAI-compatible server ---

FIRST_TOKEN_S = 0.08
TOKEN_GAP_S = 0.02


@dataclass
class FakeLlm:
    """What the fake server saw, and whether it fails."""

    url: str = ""
    hits: list[str] = field(default_factory=list)
    failing: bool = False
    tokens: int | None = None
    """Tokens per streamed answer (None: ``max_tokens``)."""
    answer_s: float = 0.0
    """How long a plain (not streamed) answer takes."""
    gap_s: float = TOKEN_GAP_S
    """Between two streamed tokens."""


STATE = web.AppKey("state", FakeLlm)


async def fake_chat(request: web.Request) -> web.StreamResponse:
    """A chat server: 500 while failing; else a one-token answer, or ``max_tokens`` tokens
    streamed, the first after FIRST_TOKEN_S and the rest TOKEN_GAP_S apart."""
    body = await request.json()
    request.app[STATE].hits.append(f"{request.path} stream={body.get('stream')}")
    if request.app[STATE].failing:
        return web.json_response({"error": {"message": "warming up"}}, status=500)
    if not body.get("stream"):
        await asyncio.sleep(request.app[STATE].answer_s)
        message = {"role": "assistant", "content": "Hi"}
        return web.json_response({"choices": [{"message": message, "finish_reason": "stop"}]})
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await asyncio.sleep(FIRST_TOKEN_S)
    for index in range(request.app[STATE].tokens or body["max_tokens"]):
        if index and request.app[STATE].gap_s:
            await asyncio.sleep(request.app[STATE].gap_s)
        delta = {"content": f" {index + 1}"}
        event = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        await response.write(f"data: {json.dumps(event)}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    return response


async def fake_embeddings(request: web.Request) -> web.Response:
    request.app[STATE].hits.append(request.path)
    await asyncio.sleep(0.03)
    return web.json_response({"data": [{"index": 0, "embedding": [1.0, 0.0]}], "usage": {}})


@pytest.fixture
async def chat_server(unused_tcp_port: int) -> AsyncIterator[FakeLlm]:
    fake = FakeLlm(url=f"http://127.0.0.1:{unused_tcp_port}")
    app = web.Application()
    app[STATE] = fake
    app.router.add_post("/v1/chat/completions", fake_chat)
    app.router.add_post("/v1/embeddings", fake_embeddings)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port).start()
    yield fake
    await runner.cleanup()


def llm_node(url: str, *capabilities: str) -> Node:
    """A static OpenAI-protocol node, as ``Settings.static_nodes`` registers one."""
    deployments = [
        DeploymentInfo(
            model="embedder" if capability == "embedding" else "llm",
            version="1",
            capability=capability,
            quality=0.3,
            latency_ms=100.0,
        )
        for capability in capabilities
    ]
    registration = NodeRegistration(
        id="llm", tier=Tier.CLOUD, zone=Zone.PUBLIC, url=url, protocol="openai",
        deployments=deployments,
    )  # fmt: skip
    return node_from_registration(registration)


@pytest.fixture
async def openai_backend() -> AsyncIterator[OpenAIBackend]:
    backend = OpenAIBackend()
    yield backend
    await backend.aclose()


async def test_a_new_chat_deployment_is_measured_once_off_the_probe_round(
    chat_server: FakeLlm, openai_backend: OpenAIBackend
) -> None:
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "chat", "summarization", "embedding"))
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.05)
    chat, summary, embedding = registry.get("llm").deployments
    described = chat.describe()
    assert (described["latency_source"], described["quality_source"]) == ("assumed", "assumed")
    assert "measurement" not in described

    before = time.time()
    await prober.probe_all()
    assert chat.latency_source is PriorSource.ASSUMED  # the round does not wait for it
    await prober.measure_pending()

    assert chat.measurement is not None
    measured = chat.measurement
    tokens = PROBE_CHAT["max_tokens"]
    assert measured.tokens == tokens
    assert FIRST_TOKEN_S * 1000 <= measured.ttft_ms < FIRST_TOKEN_S * 1000 + 150
    assert measured.tokens_per_s is not None
    assert 0.5 / TOKEN_GAP_S < measured.tokens_per_s <= 1.05 / TOKEN_GAP_S
    # The prior: a 64-token answer at the measured first-token time and rate.
    assert measured.answer_ms == pytest.approx(
        measured.ttft_ms + (ANSWER_TOKENS - 1) / measured.tokens_per_s * 1000
    )
    assert before <= measured.measured_at <= time.time()
    # The prior is the whole call, less the RTT the router adds back.
    rtt = registry.get("llm").rtt_ms
    assert chat.latency_ms == pytest.approx(measured.answer_ms - rtt)
    # The text step of the same model on the same node: the same server, the same timing.
    assert summary.measurement is measured
    assert summary.latency_ms == chat.latency_ms
    assert embedding.measurement is not None
    assert embedding.measurement.tokens_per_s is None
    assert embedding.latency_ms >= 30.0 - rtt

    described = chat.describe()
    assert described["latency_source"] == "measured"
    assert described["quality_source"] == "assumed"  # nobody measured the quality
    assert described["measurement"]["ttft_ms"] == round(measured.ttft_ms, 2)
    assert described["measurement"]["measured_at"] == measured.measured_at
    # One warm-up and one timed generation, one embedding; later rounds measure nothing.
    hits = list(chat_server.hits)
    assert sorted(hits) == sorted(
        ["/v1/chat/completions stream=False", "/v1/chat/completions stream=True", "/v1/embeddings"]
    )
    await prober.probe_all()
    await prober.measure_pending()
    assert chat_server.hits == hits


async def test_a_failed_measurement_keeps_the_prior_assumed_and_is_tried_again_later(
    chat_server: FakeLlm, openai_backend: OpenAIBackend
) -> None:
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "chat"))
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.2)
    [chat] = registry.get("llm").deployments
    chat_server.failing = True
    await prober.probe_all()
    await prober.measure_pending()
    assert (chat.latency_source, chat.latency_ms) == (PriorSource.ASSUMED, 100.0)
    assert registry.get("llm").status is NodeStatus.READY  # a probe answered: it is alive
    chat_server.failing = False
    await prober.probe_all()  # within the back-off: not tried again yet
    await prober.measure_pending()
    assert chat.latency_source is PriorSource.ASSUMED
    await asyncio.sleep(0.25)
    await prober.probe_all()
    await prober.measure_pending()
    assert chat.latency_source is PriorSource.MEASURED


async def test_a_re_registered_node_is_measured_again_and_text_steps_alone_are_not(
    chat_server: FakeLlm, openai_backend: OpenAIBackend
) -> None:
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "summarization", "captioning"))
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.05)
    await prober.probe_all()
    await prober.measure_pending()
    assert chat_server.hits == []  # no chat to probe with: the text steps stay assumed
    assert {d.latency_source for d in registry.get("llm").deployments} == {PriorSource.ASSUMED}

    registry.add(llm_node(chat_server.url, "chat"))
    await prober.probe_all()
    await prober.measure_pending()
    [chat] = registry.get("llm").deployments
    assert chat.latency_source is PriorSource.MEASURED
    registry.add(llm_node(chat_server.url, "chat"))  # a restart: new deployments
    await prober.probe_all()
    await prober.measure_pending()
    assert registry.get("llm").deployments[0].latency_source is PriorSource.MEASURED
    assert len(chat_server.hits) == 4


async def test_stop_cancels_a_measurement_under_way(
    chat_server: FakeLlm, openai_backend: OpenAIBackend
) -> None:
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "chat"))
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.05)
    await prober.probe_all()
    await asyncio.sleep(0.01)
    await prober.stop()
    assert registry.get("llm").deployments[0].latency_source is PriorSource.ASSUMED


async def test_an_answer_that_stops_early_is_timed_at_the_answer_length(
    chat_server: FakeLlm, openai_backend: OpenAIBackend
) -> None:
    chat_server.tokens = 4
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "chat"))
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.05)
    await prober.probe_all()
    await prober.measure_pending()
    [chat] = registry.get("llm").deployments
    measured = chat.measurement
    assert measured is not None
    assert measured.tokens == 4
    assert measured.tokens_per_s is not None
    # 63 tokens after the first at the measured rate, not the three that came.
    expected = measured.ttft_ms + (ANSWER_TOKENS - 1) / measured.tokens_per_s * 1000
    assert measured.answer_ms == pytest.approx(expected)
    assert measured.answer_ms > measured.ttft_ms + 30 * TOKEN_GAP_S * 1000


async def test_a_node_busy_serving_is_measured_once_its_call_is_done(
    chat_server: FakeLlm, openai_backend: OpenAIBackend
) -> None:
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "chat"))
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.05)
    node = registry.get("llm")
    [chat] = node.deployments
    chat_server.answer_s = 0.3
    messages = {"messages": [{"role": "user", "content": "hi"}]}
    serving = asyncio.create_task(openai_backend.infer(node, chat, messages, 5))
    await asyncio.sleep(0.05)
    await prober.probe_all()
    await prober.measure_pending()
    assert serving.done()
    measured = chat.measurement
    assert measured is not None
    # Timed after the call, not behind it: the fake answered the call first, then the probe.
    assert measured.ttft_ms < FIRST_TOKEN_S * 1000 + 150
    assert chat_server.hits[0] == "/v1/chat/completions stream=False"


async def test_a_node_that_stays_busy_is_left_for_a_later_pass(
    chat_server: FakeLlm, openai_backend: OpenAIBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai, "IDLE_WAIT_S", 0.1)
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "chat"))
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.05)
    node = registry.get("llm")
    [chat] = node.deployments
    chat_server.answer_s = 0.5
    messages = {"messages": [{"role": "user", "content": "hi"}]}
    serving = asyncio.create_task(openai_backend.infer(node, chat, messages, 5))
    await asyncio.sleep(0.05)
    await prober.probe_all()
    await prober.measure_pending()
    assert chat.latency_source is PriorSource.ASSUMED
    assert chat_server.hits == ["/v1/chat/completions stream=False"]  # no probe was sent
    await serving
    chat_server.answer_s = 0.0
    await prober.probe_all()  # the next round, no back-off: busy is not a failure
    await prober.measure_pending()
    assert chat.latency_source is PriorSource.MEASURED


async def test_a_pass_publishes_every_node_s_measurement_at_once(
    chat_server: FakeLlm, openai_backend: OpenAIBackend
) -> None:
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "chat"))
    other = llm_node(chat_server.url, "chat")
    other.id = "llm-2"
    registry.add(other)
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.05)
    await prober.probe_all()
    first, second = registry.get("llm").deployments[0], registry.get("llm-2").deployments[0]
    seen: list[tuple[PriorSource, PriorSource]] = []
    while prober._pass is not None and not prober._pass.done():
        seen.append((first.latency_source, second.latency_source))
        await asyncio.sleep(0.01)
    assert (first.latency_source, second.latency_source) == (PriorSource.MEASURED,) * 2
    assert set(seen) == {(PriorSource.ASSUMED, PriorSource.ASSUMED)}  # never one of two
    # One at a time: the second node's probe began after the first's answer ended.
    assert first.measurement is not None
    assert second.measurement is not None
    assert abs(first.measurement.measured_at - second.measurement.measured_at) > FIRST_TOKEN_S


async def test_tokens_that_arrive_in_one_burst_are_not_taken_for_a_rate(
    chat_server: FakeLlm, openai_backend: OpenAIBackend
) -> None:
    chat_server.gap_s = 0.0  # written at once: read at once, whatever the model's speed
    registry = NodeRegistry()
    registry.add(llm_node(chat_server.url, "chat"))
    prober = NodeProber(registry, {"openai": openai_backend}, interval_s=0.05)
    await prober.probe_all()
    await prober.measure_pending()
    [chat] = registry.get("llm").deployments
    assert chat.latency_source is PriorSource.ASSUMED
    assert chat.latency_ms == 100.0


async def test_a_node_with_an_open_breaker_is_probed_four_times_as_often() -> None:
    registry = hybrid_registry()
    breakers = Breakers(failure_threshold=1, open_seconds=30.0)
    prober = NodeProber(registry, {"v2": SlowOrDead()}, interval_s=0.4, breakers=breakers)
    await asyncio.gather(*prober._start_round(every=True))
    breakers.on_result("cloud-1/large:1", UpstreamUnavailable("refused"))
    await asyncio.sleep(0.12)  # a quarter interval: only the suspect node is due again
    again = prober._start_round()
    assert len(again) == 1
    await asyncio.gather(*again)
    assert breakers.state("cloud-1/large:1") is BreakerState.HALF_OPEN


async def test_the_prober_sleeps_until_a_probe_is_due_and_an_opening_breaker_wakes_it() -> None:
    """No fixed tick: an idle gateway's wake-ups are most of its CPU. A breaker that opens
    still has its node probed at the suspect pace at once, not after its healthy interval."""
    registry = hybrid_registry()
    probes: list[tuple[str, float]] = []

    class Counted(SlowOrDead):
        async def probe(self, node: Node, timeout_s: float) -> bool:
            probes.append((node.id, time.monotonic()))
            return True

    breakers = Breakers(failure_threshold=1, open_seconds=30.0)
    prober = NodeProber(registry, {"v2": Counted()}, interval_s=0.4, breakers=breakers)
    rounds: list[float] = []
    start_round = prober._start_round

    def counted(every: bool = False) -> list[asyncio.Task[None]]:
        rounds.append(time.monotonic())
        return start_round(every)

    prober._start_round = counted  # type: ignore[method-assign]
    prober.start()
    try:
        await asyncio.sleep(1.0)
        assert 2 <= len(rounds) <= 4  # at 0, 0.4 and 0.8 s (a quarter-interval tick: 10)
        assert sum(1 for node, _ in probes if node == "cloud-1") == 2
        seen = len(probes)
        while len(probes) == seen:  # noqa: ASYNC110 -- the next round's probes
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)
        opened = time.monotonic()
        breakers.on_result("cloud-1/large:1", UpstreamUnavailable("refused"))
        await asyncio.sleep(0.2)
        after = [at - opened for node, at in probes if node == "cloud-1" and at > opened]
        assert after
        assert after[0] < 0.15  # its healthy turn would have been 0.35 s away
    finally:
        await prober.stop()
