"""The prompt's difficulty as a routing signal: ranks, calibration, the knob, and decisions
that read it only where it can matter."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
import pytest

from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import Deployment, Tier, Zone
from hybridinfer.policy.document import RouterPolicy, compile_policy
from hybridinfer.route import learned
from hybridinfer.route.context import RouteOptions
from hybridinfer.route.difficulty import (
    LIVE_MIN,
    DifficultyScorer,
    Ranks,
    decide_reading_difficulty,
    prompt_of,
)
from hybridinfer.route.learned import Head, LearnedRouter
from hybridinfer.route.router import Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from tests.fakes import node

POLICY = "version: plain-1\nrouter:\n  calibration: reference\n"


class FakeEmbedder:
    """A two-dimensional "embedding": how many times the text says 'prove', and its length
    in hundreds of words."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        time.sleep(self.delay_s)
        rows = [[t.lower().count("prove"), len(t.split()) / 100] for t in texts]
        return np.asarray(rows, dtype=np.float64)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(t.split()) for t in texts]


REFERENCE = [round(float(q), 4) for q in np.linspace(0.0, 1.0, 101)]


def fake_scorer(delay_s: float = 0.0) -> tuple[DifficultyScorer, FakeEmbedder]:
    """A scorer whose complexity head reads P(hard) = sigmoid(4 * proves + words / 200 - 2):
    ~0.12 for a short text without 'prove', ~0.88 with one."""
    embedder = FakeEmbedder(delay_s)
    head = LearnedRouter(
        features=("embedding",),
        heads=[Head("needs_strong", 1.0, np.asarray([4.0, 0.5]), -2.0)],
        card={"calibration": {"complexity": REFERENCE}},
    )
    return DifficultyScorer({"complexity": head}, lambda: embedder), embedder  # type: ignore[arg-type, return-value]


def chat_llm(node_id: str, tier: Tier, zone: Zone, quality: float) -> Deployment:
    return Deployment(
        node_id=node_id,
        model=f"{node_id}-llm",
        version="1",
        capability="chat",
        task=None,
        quality=quality,
        latency_ms=30.0,
        cost_per_call=0.0 if tier is Tier.LOCAL else 0.001,
        max_input=100_000,
    )


def router(policy: str = POLICY) -> Router:
    registry = NodeRegistry(heartbeat_interval_s=10.0)
    for node_id, tier, zone, quality in (
        ("local", Tier.LOCAL, Zone.PRIVATE, 0.3),
        ("cloud", Tier.CLOUD, Zone.PUBLIC, 0.35),
    ):
        served = node(node_id, tier, zone, chat_llm(node_id, tier, zone, quality))
        served.protocol = "openai"
        registry.add(served)
    compiled = compile_policy(policy)
    return Router(registry, Signals(), lambda: compiled)


def chat(text: str) -> tuple[Subtask, dict[str, Any]]:
    subtask = Subtask("generate", "chat", None, {"messages": "$inputs.messages"})
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": text}]},
    ]
    return subtask, {"messages": messages}


def test_a_chat_is_read_by_its_last_user_message() -> None:
    subtask, inputs = chat("prove it")
    assert prompt_of(subtask, inputs) == "prove it"
    text = Subtask("s", "summarization", None, {"text": "$inputs.text"})
    assert prompt_of(text, {"text": "a long text"}) == "a long text"
    assert prompt_of(text, {"text": 3}) is None


def test_ranks_slide_and_rank() -> None:
    ranks = Ranks(size=4)
    for value in (1.0, 2.0, 3.0, 4.0, 5.0):
        ranks.add(value)
    assert len(ranks) == 4  # 1.0 left the window
    assert ranks.rank(1.5) == 0.0
    assert ranks.rank(3.0) == 0.5
    assert ranks.quantile(0.75) == 5.0


async def test_hard_goes_to_the_cloud_easy_stays_local_and_the_reason_says_why() -> None:
    scorer, _ = fake_scorer()
    routing = router()
    context = routing.context(RouteOptions("auto", "balanced", None))
    hard, inputs = chat("prove it " + "word " * 90)
    decision = await decide_reading_difficulty(routing, scorer, hard, context, inputs)
    assert decision.chosen.node.tier is Tier.CLOUD
    assert decision.verdict is not None
    assert decision.verdict.action == "cloud"
    assert "Difficulty 0.90 ≥ 0.50 (max quality drop 50%) → cloud." in decision.reason
    assert decision.describe()["difficulty"]["threshold"] == pytest.approx(0.5)
    easy, inputs = chat("hi")
    decision = await decide_reading_difficulty(routing, scorer, easy, context, inputs)
    assert decision.chosen.node.tier is Tier.LOCAL
    assert easy.difficulty == pytest.approx(0.1198, abs=1e-3)
    assert "Difficulty 0.12 < 0.50" in decision.reason


async def test_a_policy_without_the_router_decides_as_before() -> None:
    routing = router("version: plain-1\nrouter: {enabled: false}\n")
    scorer, fake = fake_scorer()
    for text in ("prove prove it " + "x " * 80, "hi", "what is 2 + 2?"):
        subtask, inputs = chat(text)
        context = routing.context(RouteOptions("auto", "balanced", None))
        plain = routing.decide(subtask, context)
        read = await decide_reading_difficulty(routing, scorer, subtask, context, inputs)
        assert read.chosen.deployment.id == plain.chosen.deployment.id
        assert read.reason == plain.reason
        assert read.verdict is None
    assert fake.calls == 0


async def test_a_forced_or_single_tier_decision_pays_nothing() -> None:
    scorer, fake = fake_scorer()
    routing = router()
    subtask, inputs = chat("prove prove")
    forced = routing.context(RouteOptions("cloud", "balanced", None))
    await decide_reading_difficulty(routing, scorer, subtask, forced, inputs)
    sensitive, inputs = chat("prove prove")
    sensitive.privacy = sensitive.privacy.SENSITIVE  # only the private tier survives
    auto = routing.context(RouteOptions("auto", "balanced", None))
    await decide_reading_difficulty(routing, scorer, sensitive, auto, inputs)
    assert fake.calls == 0


async def test_a_slow_scorer_is_left_out_and_the_trace_says_so() -> None:
    scorer, _ = fake_scorer(delay_s=0.3)
    routing = router(POLICY + "  timeout_ms: 20\n")
    subtask, inputs = chat("prove prove")
    context = routing.context(RouteOptions("auto", "balanced", None))
    decision = await decide_reading_difficulty(routing, scorer, subtask, context, inputs)
    assert decision.verdict is None
    assert "difficulty not read (TimeoutError)" in decision.router_note
    await asyncio.sleep(0.3)  # let the scoring thread finish before the test ends


async def test_live_calibration_moves_the_cloud_share_to_the_target() -> None:
    policy = "version: plain-1\nrouter:\n  capabilities: {chat: {target_cloud_share: 0.2}}\n"
    scorer, _ = fake_scorer()
    routing = router(policy)
    rng = np.random.default_rng(7)
    prompts = [
        "prove " * int(rng.integers(0, 2)) + " ".join(["word"] * int(rng.integers(1, 30)))
        for _ in range(2 * LIVE_MIN + 300)
    ]
    tiers = []
    for text in prompts:
        subtask, inputs = chat(text)
        context = routing.context(RouteOptions("auto", "balanced", None))
        decision = await decide_reading_difficulty(routing, scorer, subtask, context, inputs)
        tiers.append(decision.chosen.node.tier)
    measured = tiers[-300:].count(Tier.CLOUD) / 300
    assert measured == pytest.approx(0.2, abs=0.05)


def test_conditions_read_the_difficulty() -> None:
    policy = compile_policy(
        "version: p\nrules:\n  - {name: hard, when: 'subtask.difficulty > 0.9', action: cloud}\n"
    )
    assert policy.rules[0].condition is not None
    assert RouterPolicy().capabilities["chat"].max_quality_drop == 0.5


@pytest.mark.integration
async def test_the_shipped_head_holds_an_applied_cloud_share_on_tweets(embedder: Any) -> None:
    """The real chat head on MiniLM: a policy asking for 10 % or 30 % of chats on the cloud
    gets that share ± 5 points of 250 tweets (not MMLU questions, not chat), once 250 others
    warmed the live threshold."""
    import csv

    from hybridinfer.modelzoo.datasets import tweets_csv_path
    from hybridinfer.route.learned import bundled_router_path

    with tweets_csv_path().open(newline="", encoding="utf-8", errors="replace") as handle:
        texts = [row["text"] for row in csv.DictReader(handle) if len(row["text"].split()) >= 2]
    sample = [texts[int(i)] for i in np.random.default_rng(1).permutation(len(texts))[:500]]
    head = LearnedRouter.load(bundled_router_path("chat"))
    shares = {}
    for knob in ("{target_cloud_share: 0.1}", "{target_cloud_share: 0.3}"):
        scorer = DifficultyScorer({"complexity": head}, lambda: embedder)
        policy = (
            f"version: knob-1\nrouter:\n  timeout_ms: 10000\n  capabilities: {{chat: {knob}}}\n"
        )
        routing = router(policy)
        tiers = []
        for text in sample:
            subtask, inputs = chat(text)
            context = routing.context(RouteOptions("auto", "balanced", None))
            decision = await decide_reading_difficulty(routing, scorer, subtask, context, inputs)
            assert decision.verdict is not None, decision.router_note
            tiers.append(decision.chosen.node.tier)
        shares[knob] = tiers[250:].count(Tier.CLOUD) / 250
        scorer.close()
    assert shares["{target_cloud_share: 0.1}"] == pytest.approx(0.1, abs=0.05), shares
    assert shares["{target_cloud_share: 0.3}"] == pytest.approx(0.3, abs=0.05), shares


async def test_expected_quality_follows_the_difficulty() -> None:
    """On an easy prompt every candidate is expected to answer as well as the best; on a hard
    one each keeps its registered figure (0.3 local, 0.35 cloud here)."""
    scorer, _ = fake_scorer()
    routing = router()
    expected = {}
    for name, text in (("easy", "hi"), ("hard", "prove it " + "word " * 90)):
        subtask, inputs = chat(text)
        context = routing.context(RouteOptions("auto", "balanced", None))
        decision = await decide_reading_difficulty(routing, scorer, subtask, context, inputs)
        assert subtask.difficulty is not None
        expected[name] = {c.node.tier: c.expected_quality for c in decision.candidates}
        best, local = 0.35, 0.3
        assert expected[name][Tier.CLOUD] == pytest.approx(best)
        assert expected[name][Tier.LOCAL] == pytest.approx(
            best - (best - local) * subtask.difficulty
        )
        assert "expected quality" in decision.reason
    assert expected["easy"][Tier.LOCAL] > expected["hard"][Tier.LOCAL]
    plain, inputs = chat("hi")  # no difficulty read (prefer=quality): the registered figures
    context = routing.context(RouteOptions("auto", "quality", None))
    decision = await decide_reading_difficulty(routing, scorer, plain, context, inputs)
    assert all(c.expected_quality is None for c in decision.candidates)


async def test_only_the_weighted_heads_are_scored_and_only_their_features_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The MMLU head (question-form features) costs time the default chat weights never use."""
    scorer, embedder = fake_scorer()
    structure = LearnedRouter(
        features=("structure",),
        heads=[Head("gain", 1.0, np.zeros(21), 0.0)],
        card={},
    )
    scorer._heads["learned"] = structure
    computed: list[int] = []
    real = learned.structure_features

    def counted(prompts: list[str]) -> np.ndarray:
        computed.append(len(prompts))
        return real(prompts)

    monkeypatch.setattr(learned, "structure_features", counted)
    policy = RouterPolicy(weights={"complexity": 1.0})
    found = await scorer.score("chat", "please prove this", policy)
    assert computed == []
    assert set(found.signals) == {"words", "complexity"}
    assert embedder.calls == 1
    both = RouterPolicy(weights={"complexity": 1.0, "learned": 0.5})
    found = await scorer.score("chat", "please prove this", both)
    assert computed == [1]
    assert set(found.signals) == {"words", "complexity", "learned"}
    scorer.close()


async def test_a_head_without_the_embedding_leaves_no_empty_vector_behind() -> None:
    """Scored alone, a head that reads no embedding embeds nothing; the answer cache's vector
    for the same short prompt is then embedded on demand, not taken from the empty table."""
    scorer, embedder = fake_scorer()
    scorer._heads["learned"] = LearnedRouter(
        features=("text", "choices"),
        heads=[Head("gain", 1.0, np.zeros(7 + 7), 0.0)],
        card={},
    )
    question = "Which one?\nA. this\nB. that\nAnswer:"
    await scorer.score("chat", question, RouterPolicy(weights={"learned": 1.0}))
    assert embedder.calls == 1  # the answer-choice features: one batch, stem and choices
    vector = scorer.vector(question)
    assert vector is not None
    assert vector.shape == (2,)
    assert embedder.calls == 2
    scorer.close()
