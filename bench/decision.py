"""Routing decision latency: plans of 1 and 10 subtasks over 20 deployments (2-core machine).

Times `Router.context` (one signal snapshot per request) plus `Router.decide` per subtask
under the shipped default policy (5 CEL rules). Writes bench/results/decision.json.
"""

from __future__ import annotations

import time

from bench.harness import percentiles, write_result
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Deployment, Node, TensorSpec, Tier, Zone
from hybridinfer.policy.document import default_policy_path, load_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry

ROUNDS = 3000


def registry_with(deployments: int) -> NodeRegistry:
    """``deployments`` sentiment deployments spread over local, edge and cloud nodes."""
    registry = NodeRegistry()
    tiers = [(Tier.LOCAL, Zone.PRIVATE), (Tier.EDGE, Zone.PRIVATE), (Tier.CLOUD, Zone.PUBLIC)]
    for index in range(deployments):
        tier, zone = tiers[index % 3]
        node_id = f"{tier.value}-{index}"
        deployment = Deployment(
            node_id=node_id,
            model=f"model-{index}",
            version="1",
            capability="text-classification",
            task="sentiment",
            quality=0.7 + 0.01 * index,
            latency_ms=0.5 + index,
            labels=["negative", "neutral", "positive"],
            inputs=[TensorSpec("text", "BYTES", [-1, 1])],
            cost_per_call=0.0 if tier is Tier.LOCAL else 0.0001 * index,
        )
        protocol = "onnx" if tier is Tier.LOCAL else "v2"
        registry.add(Node(node_id, tier, zone, f"http://{node_id}", protocol, [deployment]))
    return registry


def subtasks(count: int) -> list[Subtask]:
    return [
        Subtask(
            id=f"s{index}",
            capability="text-classification",
            task="sentiment",
            inputs={},
            privacy=Privacy.SENSITIVE if index % 4 == 0 else Privacy.INTERNAL,
            complexity=(index % 10) / 10,
            size=100,
        )
        for index in range(count)
    ]


def measure(router: Router, plan: list[Subtask]) -> list[float]:
    options = RouteOptions()
    samples = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        context = router.context(options, "sentiment", "key")
        for subtask in plan:
            router.decide(subtask, context)
        samples.append((time.perf_counter() - started) * 1e6)
    return samples[ROUNDS // 10 :]


def main() -> None:
    policy = load_policy(default_policy_path())
    router = Router(registry_with(20), Signals(), lambda: policy)
    result: dict[str, object] = {
        "deployments": 20,
        "policy": policy.version,
        "rules": len(policy.rules),
    }
    for size in (1, 10):
        stats = percentiles(measure(router, subtasks(size)))
        per_subtask = {k: round(v / size, 2) for k, v in stats.items() if k != "n"}
        result[f"plan_{size}_us"] = stats
        result[f"plan_{size}_per_subtask_us"] = per_subtask
        print(
            f"plan of {size:>2} subtasks: p50 {stats['p50']:8.1f} µs  p99 {stats['p99']:8.1f} µs  "
            f"per subtask p50 {per_subtask['p50']:6.1f} µs (target ≤ 50)"
        )
    print(f"wrote {write_result('decision', result)}")


if __name__ == "__main__":
    main()
