"""The cache stage as the executor sees it: a hit stands for the call, and an answer a
fallback gave is kept for the chosen deployment and for the one that answered."""

from __future__ import annotations

from hybridinfer.answers.memory import MemoryAnswers
from hybridinfer.answers.stage import AnswerStage, ReuseRequest
from hybridinfer.core.decision import Candidate, Decision
from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.core.trace import Attempt
from hybridinfer.execute.reuse import AnswerReuse
from hybridinfer.policy.answers import AnswersPolicy
from tests.fakes import deployment, node


def candidate(node_id: str, tier: Tier, cost: float) -> Candidate:
    found = deployment(node_id, "m", quality=0.9, latency_ms=1.0, cost=cost)
    return Candidate(found, node(node_id, tier, Zone.PRIVATE, found))


async def test_a_fallbacks_answer_serves_both_deployments_and_saves_its_cost() -> None:
    chosen, fallback = candidate("edge-1", Tier.EDGE, 0.0), candidate("cloud-1", Tier.CLOUD, 0.01)
    decision = Decision("classify", chosen, [fallback], [chosen, fallback], "why", "p1")
    reuse = AnswerReuse(AnswerStage(MemoryAnswers(1 << 20), MemoryAnswers(1 << 20), AnswersPolicy))
    subtask = Subtask("classify", "text-classification", "sentiment", {})
    request, inputs = ReuseRequest("alice"), {"text": "fine"}
    used = Attempt("classify", fallback.deployment.id, "cloud", "cloud-1", "m", "fallback")
    await reuse.keep(subtask, decision, inputs, request, {"label": "positive"}, used, "r1")
    found = await reuse.lookup(subtask, decision, inputs, request)
    assert found is not None
    outputs, attempt, account = found
    assert outputs == {"label": "positive"}
    assert (attempt.role, attempt.node, attempt.tier) == ("reused", "cloud-1", "cloud")
    assert account["request_id"] == "r1"
    assert account["saved"] == 0.01
    routed_to_cloud = Decision("classify", fallback, [], [fallback], "why", "p1")
    assert await reuse.lookup(subtask, routed_to_cloud, inputs, request) is not None
