"""Pinning a decision to one named model: its deployments keep their order, the others are
rejected by ``model``, and a model that cannot serve says why."""

from __future__ import annotations

import pytest

from hybridinfer.core.decision import Candidate, Cascade, Decision
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.errors import NoCapacity, PayloadTooLarge, PrivacyViolation, UnknownModel
from hybridinfer.route.pin import pin
from tests.fakes import deployment, node


def candidate(node_id: str, model: str, tier: Tier = Tier.EDGE, **fields: object) -> Candidate:
    zone = Zone.PUBLIC if tier is Tier.CLOUD else Zone.PRIVATE
    served = deployment(node_id, model, quality=0.8, latency_ms=1.0)
    return Candidate(served, node(node_id, tier, zone, served), **fields)  # type: ignore[arg-type]


def decision(*rejected: Candidate) -> Decision:
    small = candidate("local", "small", Tier.LOCAL, score=0.9)
    large_edge = candidate("edge-1", "large", score=0.6)
    large_cloud = candidate("cloud-1", "large", Tier.CLOUD, score=0.4)
    return Decision(
        subtask_id="classify",
        chosen=small,
        fallbacks=[large_edge, large_cloud],
        candidates=[small, large_edge, large_cloud, *rejected],
        reason="balanced",
        policy_version="p1",
        cascade=Cascade(0.7, [large_cloud]),
        rules=["light-work-stays-private"],
    )


@pytest.mark.parametrize("model", [None, "auto"])
def test_no_model_or_auto_leaves_the_decision_as_it_is(model: str | None) -> None:
    original = decision()
    assert pin(original, model) is original


def test_the_named_models_deployments_keep_their_order_and_the_others_are_rejected() -> None:
    original = decision()

    pinned = pin(original, "large")

    assert pinned.chosen.node.id == "edge-1"
    assert [c.node.id for c in pinned.fallbacks] == ["cloud-1"]
    assert pinned.cascade is None  # no escalation to another model
    assert pinned.rules == ["light-work-stays-private"]
    assert pinned.policy_version == "p1"
    assert pinned.reason == "Pinned by the request to large on edge-1 (edge); 1 fallback(s)."
    small = next(c for c in pinned.candidates if c.deployment.model == "small")
    assert (small.rejected_by, small.detail) == ("model", "the request pins model large")


def test_a_model_nobody_serves_is_404() -> None:
    with pytest.raises(UnknownModel) as missing:
        pin(decision(), "huge")
    assert missing.value.status_code == 404


@pytest.mark.parametrize(
    ("rejected_by", "error"),
    [
        ("privacy", PrivacyViolation),
        ("input_limit", PayloadTooLarge),
        ("health", NoCapacity),
        ("budget", NoCapacity),
    ],
)
def test_a_model_whose_every_deployment_was_filtered_out_fails_with_that_reason(
    rejected_by: str, error: type[Exception]
) -> None:
    filtered = candidate("cloud-2", "special", Tier.CLOUD, rejected_by=rejected_by, detail="why")
    with pytest.raises(error, match="cloud-2/special:1: why"):
        pin(decision(filtered), "special")


def test_an_already_rejected_candidate_keeps_its_own_reason() -> None:
    down = candidate("edge-2", "small", rejected_by="health", detail="down")
    pinned = pin(decision(down), "large")
    assert (down.rejected_by, down.detail) == ("health", "down")
    assert pinned.chosen.deployment.model == "large"
