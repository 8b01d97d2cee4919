"""The cache stage with fake embeddings: which calls may be reused, and where entries live."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from hybridinfer.answers import signature
from hybridinfer.answers.base import Answer, Vector
from hybridinfer.answers.memory import MemoryAnswers
from hybridinfer.answers.stage import AnswerStage, ReuseRequest
from hybridinfer.core.decision import Candidate
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.policy.answers import AnswersPolicy, CapabilityReuse
from tests.fakes import deployment, node

SEMANTIC = AnswersPolicy(
    capabilities={
        "chat": CapabilityReuse(mode="semantic", threshold=0.9),
        "text-classification": CapabilityReuse(),
    }
)
VECTORS = {
    "what is the capital of france?": [1.0, 0.0, 0.0],
    "tell me the capital of france.": [0.99, 0.1, 0.0],
    "what is the capital of spain?": [0.98, 0.15, 0.0],  # near, but another name
    "how do volcanoes form?": [0.0, 0.0, 1.0],
}


async def fake_embed(text: str) -> Vector:
    vector = np.asarray(VECTORS[text.lower()], dtype=np.float32)
    return vector / np.linalg.norm(vector)


def candidate(version: str = "1", tier: Tier = Tier.CLOUD) -> Candidate:
    found = dataclasses.replace(deployment("n1", "m", quality=0.9, latency_ms=1.0), version=version)
    zone = Zone.PUBLIC if tier is Tier.CLOUD else Zone.PRIVATE
    return Candidate(found, node("n1", tier, zone, found))


def chat_subtask(privacy: Privacy = Privacy.INTERNAL) -> Subtask:
    return Subtask("generate", "chat", None, {}, privacy=privacy)


def chat(text: str, temperature: float | None = 0.0) -> dict[str, Any]:
    inputs: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    if temperature is not None:
        inputs["temperature"] = temperature
    return inputs


def answer(request_id: str = "first") -> Answer:
    return Answer(
        {"message": {"content": "Paris"}}, request_id, "n1/m:1", "cloud", "n1", "m", 0.01, 1.0
    )


@pytest.fixture
def stage() -> AnswerStage:
    return AnswerStage(MemoryAnswers(1 << 20), MemoryAnswers(1 << 20), lambda: SEMANTIC, fake_embed)


async def test_an_exact_repeat_hits_and_names_the_first_request(stage: AnswerStage) -> None:
    alice = ReuseRequest("alice")
    inputs = chat("What is the capital of France?")
    assert await stage.lookup(chat_subtask(), candidate(), inputs, alice) is None
    await stage.keep(chat_subtask(), candidate(), inputs, alice, answer())
    hit = await stage.lookup(chat_subtask(), candidate(), inputs, alice)
    assert hit is not None
    assert hit.kind == "hit"
    assert hit.describe()["request_id"] == "first"
    assert stage.stats.summary()["chat"]["hits"] == 1
    assert stage.stats.summary()["chat"]["saved_spend"] == pytest.approx(0.01)


async def test_a_paraphrase_hits_semantically_a_near_miss_does_not(stage: AnswerStage) -> None:
    alice = ReuseRequest("alice")
    await stage.keep(
        chat_subtask(), candidate(), chat("What is the capital of France?"), alice, answer()
    )
    hit = await stage.lookup(
        chat_subtask(), candidate(), chat("Tell me the capital of France."), alice
    )
    assert hit is not None
    assert hit.kind == "semantic"
    assert hit.similarity > 0.9
    miss = await stage.lookup(
        chat_subtask(), candidate(), chat("What is the capital of Spain?"), alice
    )
    assert miss is None
    far = await stage.lookup(chat_subtask(), candidate(), chat("How do volcanoes form?"), alice)
    assert far is None


async def test_without_the_guard_there_is_no_semantic_hit(
    stage: AnswerStage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As when the answers extra (spaCy's model, WordNet) is not installed: exact hits only.
    monkeypatch.setattr(signature, "MODEL_PACKAGE", "no_such_model_package")
    signature._nlp.cache_clear()
    try:
        alice = ReuseRequest("alice")
        kept = chat("What is the capital of France?")
        await stage.keep(chat_subtask(), candidate(), kept, alice, answer())
        paraphrase = chat("Tell me the capital of France.")
        assert await stage.lookup(chat_subtask(), candidate(), paraphrase, alice) is None
        assert await stage.lookup(chat_subtask(), candidate(), kept, alice) is not None
    finally:
        signature._nlp.cache_clear()


async def test_an_entry_kept_without_the_guard_never_hits_semantically(
    stage: AnswerStage, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = ReuseRequest("alice")
    with monkeypatch.context() as patched:
        patched.setattr(signature, "MODEL_PACKAGE", "no_such_model_package")
        signature._nlp.cache_clear()
        await stage.keep(
            chat_subtask(), candidate(), chat("What is the capital of France?"), alice, answer()
        )
    signature._nlp.cache_clear()
    paraphrase = chat("Tell me the capital of France.")
    assert await stage.lookup(chat_subtask(), candidate(), paraphrase, alice) is None


async def test_tenants_scopes_versions_and_tiers_do_not_share(stage: AnswerStage) -> None:
    inputs = chat("What is the capital of France?")
    await stage.keep(chat_subtask(), candidate(), inputs, ReuseRequest("alice"), answer())
    for request, chosen in [
        (ReuseRequest("bob"), candidate()),
        (ReuseRequest("alice", scope="team-a"), candidate()),
        (ReuseRequest("alice"), candidate(version="2")),
        (ReuseRequest("alice"), candidate(tier=Tier.EDGE)),
    ]:
        assert await stage.lookup(chat_subtask(), chosen, inputs, request) is None, request


async def test_a_sampled_chat_is_reused_only_when_asked(stage: AnswerStage) -> None:
    alice, asked = ReuseRequest("alice"), ReuseRequest("alice", mode="reuse")
    hot = chat("What is the capital of France?", temperature=0.7)
    await stage.keep(chat_subtask(), candidate(), hot, alice, answer())
    assert await stage.lookup(chat_subtask(), candidate(), hot, asked) is None  # never kept
    await stage.keep(chat_subtask(), candidate(), hot, asked, answer())
    assert await stage.lookup(chat_subtask(), candidate(), hot, alice) is None
    assert await stage.lookup(chat_subtask(), candidate(), hot, asked) is not None


async def test_off_and_refresh(stage: AnswerStage) -> None:
    inputs = chat("What is the capital of France?")
    await stage.keep(chat_subtask(), candidate(), inputs, ReuseRequest("a", mode="off"), answer())
    assert await stage.lookup(chat_subtask(), candidate(), inputs, ReuseRequest("a")) is None
    await stage.keep(
        chat_subtask(), candidate(), inputs, ReuseRequest("a", mode="refresh"), answer()
    )
    assert (
        await stage.lookup(chat_subtask(), candidate(), inputs, ReuseRequest("a", mode="refresh"))
        is None
    )
    assert await stage.lookup(chat_subtask(), candidate(), inputs, ReuseRequest("a")) is not None


async def test_sensitive_answers_live_in_the_private_store_only() -> None:
    shared, private = MemoryAnswers(1 << 20), MemoryAnswers(1 << 20)
    stage = AnswerStage(shared, private, lambda: SEMANTIC, fake_embed)
    inputs = chat("What is the capital of France?")
    findings: dict[str, Any] = {"kinds": {}}
    request = ReuseRequest("alice", findings=findings)
    findings["kinds"] = {"PERSON": 1}  # found after the request began (names before a call)
    await stage.keep(chat_subtask(), candidate(), inputs, request, answer())
    assert len(shared) == 0
    assert len(private) == 1
    assert await stage.lookup(chat_subtask(), candidate(), inputs, ReuseRequest("alice")) is None
    flagged = ReuseRequest("alice", private=True)
    assert await stage.lookup(chat_subtask(), candidate(), inputs, flagged) is not None
    sensitive = chat_subtask(Privacy.SENSITIVE)
    assert await stage.lookup(sensitive, candidate(), inputs, ReuseRequest("alice")) is not None


async def test_a_capability_the_policy_does_not_list_is_never_reused(stage: AnswerStage) -> None:
    subtask = Subtask("redact", "redact", None, {})
    await stage.keep(subtask, candidate(), {"text": "x"}, ReuseRequest("a"), answer())
    assert await stage.lookup(subtask, candidate(), {"text": "x"}, ReuseRequest("a")) is None


async def test_flush_a_tenant(stage: AnswerStage) -> None:
    inputs = chat("What is the capital of France?")
    for tenant in ("alice", "bob"):
        await stage.keep(chat_subtask(), candidate(), inputs, ReuseRequest(tenant), answer())
    assert await stage.flush("alice") == 1
    assert await stage.lookup(chat_subtask(), candidate(), inputs, ReuseRequest("alice")) is None
    assert await stage.lookup(chat_subtask(), candidate(), inputs, ReuseRequest("bob")) is not None
