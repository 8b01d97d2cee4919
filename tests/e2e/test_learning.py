"""Acceptance, live: `hybridinfer up` with its real cloud node process, over real HTTP.

With learning on, ``explore: 0`` and no data, every decision is the static policy's; then
feedback on real requests (the local answers marked wrong, the cloud ones right) moves later
decisions to the cloud, and the reason says the choice was learned."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Running, cloud_ready, wait_until

pytestmark = pytest.mark.integration

Launch = Callable[..., Running]
# Balanced weighs cost above quality + latency here, so the static choice is the free local
# model whichever tier this host happens to measure faster (with the default equal weights a
# loaded host, whose in-process model answers slower than the cloud node's process, sends
# every balanced request to the cloud and the learner has nothing to move).
# The other modes keep the default policy's weights (a mode the block leaves out would get
# equal weights, which decide by the faster tier too).
WEIGHTS = """\
prefer:
  balanced: {latency: 0.25, cost: 2.0, quality: 1.0}
  latency: {latency: 1.0, cost: 0.25, quality: 0.25}
  cost: {latency: 0.25, cost: 1.0, quality: 0.25}
  quality: {latency: 0.25, cost: 0.25, quality: 1.0}
"""
STATIC = "version: static-1\n" + WEIGHTS
LEARNING = (
    """\
version: learn-1
learning: {enabled: true, explore: 0.0, min_samples: 3, feedback_window_s: 3, half_life: 50}
"""
    + WEIGHTS
)
TEXTS = ["I love this", "this is awful", "the bus came at noon", "not bad at all", "meh"]
PREFERS = ["balanced", "quality", "latency", "cost"]
ROUNDS = 2


def apply(client: httpx.Client, policy: str) -> None:
    applied = client.post("/v1/policies", json={"policy": policy})
    assert applied.status_code == 201, applied.text


def infer(client: httpx.Client, text: str, **options: Any) -> dict[str, Any]:
    body = {"task": "sentiment", "inputs": {"text": text}, "options": options}
    response = client.post("/v1/infer", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def decision_of(client: httpx.Client, request_id: str) -> dict[str, Any]:
    trace = client.get(f"/v1/traces/{request_id}")
    assert trace.status_code == 200, trace.text
    (decision,) = trace.json()["decisions"]
    return dict(decision)


def comparable(decision: dict[str, Any]) -> tuple[object, ...]:
    """What was decided; the reason with its measured figures masked (latencies move)."""
    reason = re.sub(r"\d+(\.\d+)?", "#", decision["reason"])
    return (decision["chosen"], decision["fallbacks"], decision["cascade"], reason)


def decisions(client: httpx.Client) -> list[dict[str, Any]]:
    made = []
    for prefer in PREFERS:
        for text in TEXTS:
            request_id = infer(client, text, prefer=prefer)["request_id"]
            made.append(decision_of(client, request_id))
    return made


def static_decisions_match(client: httpx.Client) -> tuple[int, list[str]]:
    """Decide the workload under the static policy, the learning one, and the static one
    again: where both static rounds agree (the live latencies did not move the scores), the
    learning policy's decision is the same. How many such decisions there were, and the
    learning policy's tiers at ``prefer: balanced``."""
    apply(client, STATIC)
    decisions(client)  # warm: first calls load models and settle the latency estimates
    before = decisions(client)
    apply(client, LEARNING)
    learning = decisions(client)
    apply(client, STATIC.replace("static-1", "static-2"))
    after = decisions(client)
    apply(client, LEARNING.replace("learn-1", "learn-2"))
    stable = 0
    for first, learned, second in zip(before, learning, after, strict=True):
        assert learned["learning"]["mode"] == "static"  # no data yet: the learner defers
        assert learned["learning"]["propensity"] == 1.0
        if comparable(first) == comparable(second):
            assert comparable(learned) == comparable(first)
            stable += 1
    return stable, [d["tier"] for d in learning[: len(TEXTS)]]


def feedback(client: httpx.Client, request_id: str, correct: bool) -> None:
    given = client.post("/v1/feedback", json={"request_id": request_id, "correct": correct})
    assert given.status_code == 200, given.text
    assert given.json()["teaches_learner"] is True


def applied(client: httpx.Client, outcomes: int) -> bool:
    """Whether the learner has applied ``outcomes`` outcomes (each falls due after 3 s)."""
    found = client.get("/v1/learners/text-classification")
    if found.status_code != 200:
        return False
    return int(found.json()["learners"]["text-classification"]["outcomes"]) >= outcomes


def test_feedback_on_real_requests_moves_later_decisions(launch: Launch) -> None:
    running = launch()
    wait_until(lambda: cloud_ready(running), 30, "cloud node registered", running)
    with running.client() as client:
        stable, before = static_decisions_match(client)
        assert stable >= len(PREFERS) * len(TEXTS) // 2
        assert before.count("cloud") == 0  # balanced: the free local model

        for _ in range(ROUNDS):  # each feedback right after its request: inside the window
            for text in TEXTS:
                local = infer(client, text, route="local")
                feedback(client, local["request_id"], correct=False)
                cloud = infer(client, text, route="cloud")
                assert cloud["subtasks"][0]["tier"] == "cloud"
                feedback(client, cloud["request_id"], correct=True)
        # Every request under a learning policy left one outcome.
        total = len(PREFERS) * len(TEXTS) + ROUNDS * 2 * len(TEXTS)
        wait_until(lambda: applied(client, total), 30, "the learner applied them", running)

        moved = [infer(client, text) for text in TEXTS]
        tiers = [m["subtasks"][0]["tier"] for m in moved]
        assert tiers.count("cloud") >= len(TEXTS) - 1 > before.count("cloud")
        first = next(m for m in moved if m["subtasks"][0]["tier"] == "cloud")
        reason = first["subtasks"][0]["reason"]
        assert reason.startswith("Learned: sentiment-large on cloud-1 (cloud) estimated reward")
        decision = decision_of(client, first["request_id"])
        assert decision["learning"]["mode"] == "learned"
        assert decision["learning"]["propensity"] == 1.0
        estimates = decision["learning"]["estimates"]
        assert (
            estimates["cloud-1/sentiment-large:1"]["reward"]
            > estimates["local/sentiment-small:1"]["reward"]
        )
