"""How a routing decision describes itself in a trace: ids, rounding, cascade and rejections."""

from __future__ import annotations

from hybridinfer.core.decision import Candidate, Cascade, Decision
from hybridinfer.core.topology import Tier, Zone
from tests.fakes import deployment, node


def candidate(node_id: str, tier: Tier, zone: Zone, **fields: object) -> Candidate:
    served = deployment(node_id, f"m-{node_id}", quality=0.8, latency_ms=2.0, cost=0.001)
    return Candidate(served, node(node_id, tier, zone, served), **fields)  # type: ignore[arg-type]


def test_a_candidate_rounds_its_figures_and_says_what_rejected_it() -> None:
    scored = candidate(
        "local", Tier.LOCAL, Zone.PRIVATE, score=0.123456, expected_latency_ms=1.23456
    )
    rejected = candidate("cloud", Tier.CLOUD, Zone.PUBLIC, rejected_by="privacy", detail="public")

    assert scored.describe() == {
        "deployment": "local/m-local:1",
        "tier": "local",
        "zone": "private",
        "score": 0.1235,
        "expected_latency_ms": 1.235,
        "quality": 0.8,
        "expected_quality": None,
        "cost_per_call": 0.001,
        "rejected_by": None,
        "detail": "",
    }
    assert rejected.describe()["score"] is None
    assert (rejected.describe()["rejected_by"], rejected.describe()["detail"]) == (
        "privacy",
        "public",
    )


def test_a_decision_names_its_chain_and_its_cascade() -> None:
    local = candidate("local", Tier.LOCAL, Zone.PRIVATE, score=0.9)
    edge = candidate("edge", Tier.EDGE, Zone.PRIVATE, score=0.5)
    cloud = candidate("cloud", Tier.CLOUD, Zone.PUBLIC, score=0.4)
    decision = Decision(
        subtask_id="classify",
        chosen=local,
        fallbacks=[edge],
        candidates=[local, edge, cloud],
        reason="cheapest",
        policy_version="p1",
        cascade=Cascade(0.7, [cloud]),
        rules=["light-work-stays-private"],
    )

    described = decision.describe()

    assert described["chosen"] == "local/m-local:1"
    assert described["tier"] == "local"
    assert described["fallbacks"] == ["edge/m-edge:1"]
    assert described["cascade"] == {"threshold": 0.7, "escalate_to": ["cloud/m-cloud:1"]}
    assert [c["deployment"] for c in described["candidates"]] == [
        "local/m-local:1",
        "edge/m-edge:1",
        "cloud/m-cloud:1",
    ]
    assert (described["reason"], described["policy_version"]) == ("cheapest", "p1")
    described["rules"].append("mutated")
    assert decision.rules == ["light-work-stays-private"]


def test_a_decision_without_cascade_says_none() -> None:
    local = candidate("local", Tier.LOCAL, Zone.PRIVATE)
    decision = Decision("s", local, [], [local], "only one", "p1")
    assert decision.describe()["cascade"] is None
    assert decision.describe()["rules"] == []
