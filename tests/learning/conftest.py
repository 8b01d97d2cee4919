"""A router over two tiers with the online learner on, fed outcomes directly (no store)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hybridinfer.core.decision import Decision
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.learning.bandit import Outcome
from hybridinfer.learning.engine import Learners
from hybridinfer.policy.document import CompiledPolicy, compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from tests.fakes import deployment, node
from tests.store.conftest import postgres_url, store, store_url

__all__ = ["postgres_url", "store", "store_url"]

LOCAL = "local/small:1"
CLOUD = "cloud-1/large:1"


def two_tiers() -> NodeRegistry:
    """A free, fast local model and a paid, slower cloud one."""
    registry = NodeRegistry(heartbeat_interval_s=10.0)
    registry.add(
        node(
            "local",
            Tier.LOCAL,
            Zone.PRIVATE,
            deployment("local", "small", quality=0.7, latency_ms=2.0),
        )
    )
    registry.add(
        node(
            "cloud-1",
            Tier.CLOUD,
            Zone.PUBLIC,
            deployment("cloud-1", "large", quality=0.8, latency_ms=80.0, cost=0.0002),
        )
    )
    return registry


def learning_policy(block: str, extra: str = "") -> CompiledPolicy:
    return compile_policy(f"version: learn-1\nlearning: {block}\n{extra}")


def subtask(difficulty: float | None = None, privacy: Privacy = Privacy.INTERNAL) -> Subtask:
    made = Subtask(
        id="classify",
        capability="text-classification",
        task="sentiment",
        inputs={"text": "$inputs.text"},
        privacy=privacy,
        size=20,
    )
    made.difficulty = difficulty
    return made


@dataclass
class Harness:
    """The real router and learner; outcomes applied as the sync would apply log rows."""

    router: Router
    learners: Learners
    policy: CompiledPolicy
    applied: list[dict[str, Any]] = field(default_factory=list)

    def decide(
        self, the_subtask: Subtask, options: RouteOptions | None = None, key: str = "k1"
    ) -> Decision:
        context = self.router.context(options or RouteOptions(), "sentiment", key)
        return self.router.decide(the_subtask, context)

    def learn(self, decision: Decision, outcome: Outcome, key: str = "k1") -> None:
        record = decision.learning
        if record is None:  # learning off: nothing to learn
            return
        row = {
            "capability": record["capability"],
            "arm": record["arm"],
            "context": record["context"],
            "public": record["public"],
            "quality": outcome.quality,
            "latency": outcome.latency,
            "cost": outcome.cost,
            "key_id": key,
        }
        self.applied.append(row)
        self.learners.apply(row)


def harness(policy: CompiledPolicy, registry: NodeRegistry | None = None, seed: int = 7) -> Harness:
    learners = Learners(lambda: policy.policy.learning, seed=seed)
    router = Router(registry or two_tiers(), Signals(), lambda: policy, learners=learners)
    return Harness(router, learners, policy)
