"""Routing decision latency: plans of 1 and 10 subtasks over 20 deployments (2-core machine).

Times `Router.context` (one signal snapshot per request) plus `Router.decide` per subtask
under the shipped default policy (5 CEL rules), in three ways, interleaved in blocks of
``BLOCK`` requests so the machine's load falls on all alike (each block back to back: the
decision time under load):

- ``unshared``: the decision snapshot off (ttl 0): every decision reads the registry, breakers
  and signals and ranks its candidates itself, as before snapshots were shared;
- ``shared``: the snapshot on, requests alike (the same plan each time: how a task's traffic
  looks, the rules reading only the plan's labels);
- ``shared_distinct``: the snapshot on, each request's subtasks with a complexity never seen
  before (a rule reads it), so rules and ranking run again and only the snapshot's facts
  (candidates, expected latency, health, breakers, ejections, tier maps) are shared.

Then requests alike at a steady pace, each a few hundred times: one every millisecond
(``shared_paced``, 1,000 a second), one every 5 ms (``shared_paced_5ms``, 200 a second) and
one every 100 ms (``shared_paced_100ms``, 10 a second), where the snapshot (``ttl_s``, 50 ms)
has expired by the next request and is rebuilt. Between paced requests the machine's caches
cool, so a paced decision costs more than the same one back to back. How much of that is the
machine's is measured beside it: a fixed piece of Python with no routing in it (``control``,
ranking 20 tuples and filling a dict, a fraction of a decision's time) timed back to back and
at the same paces.

Writes bench/results/decision.json.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable

from bench.harness import percentiles, write_result
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Deployment, Node, TensorSpec, Tier, Zone
from hybridinfer.policy.document import default_policy_path, load_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.route.snapshot import DEFAULT_TTL_S, DecisionSnapshots
from hybridinfer.signals.breaker import Breakers
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry

ROUNDS = 3000
BLOCK = 100
PACES = {"shared_paced": (0.001, 1000), "shared_paced_5ms": (0.005, 1000)}
PACES["shared_paced_100ms"] = (0.1, 150)
"""Way: (seconds between requests, requests). The last outlives the snapshot."""
TARGET_US = 20.0
_distinct = itertools.count()


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


def subtasks(count: int, distinct: bool = False) -> list[Subtask]:
    """A plan; ``distinct``: complexities no earlier plan had."""
    return [
        Subtask(
            id=f"s{index}",
            capability="text-classification",
            task="sentiment",
            inputs={},
            privacy=Privacy.SENSITIVE if index % 4 == 0 else Privacy.INTERNAL,
            complexity=(next(_distinct) % 10**9) / 10**9 if distinct else (index % 10) / 10,
            size=100,
        )
        for index in range(count)
    ]


CONTROL_ITEMS = [(f"node-{index}", 0.5 + index * 0.37 % 3, index % 3) for index in range(20)]


def control() -> float:
    """A fixed piece of Python with nothing of routing in it, shorter than a decision (µs)."""
    started = time.perf_counter()
    ranked = sorted(CONTROL_ITEMS, key=lambda item: (item[2], item[1]))
    chosen = {name: latency * 2 for name, latency, _tier in ranked if latency > 0.1}
    assert len(chosen) == len(CONTROL_ITEMS)
    return (time.perf_counter() - started) * 1e6


def controls() -> dict[str, dict[str, float]]:
    """``control`` back to back and at the paces of ``PACES`` below the snapshot's life."""
    found = {"back_to_back": percentiles([control() for _ in range(ROUNDS)][ROUNDS // 10 :])}
    for name, (pace_s, count) in PACES.items():
        if pace_s >= DEFAULT_TTL_S:
            continue
        samples = []
        for _ in range(count):
            time.sleep(pace_s)
            samples.append(control())
        found[name] = percentiles(samples[count // 10 :])
    return found


def timed(router: Router, plan: list[Subtask]) -> float:
    """One request: its context, then every subtask's decision (µs)."""
    started = time.perf_counter()
    context = router.context(RouteOptions(), "sentiment", "key")
    for subtask in plan:
        router.decide(subtask, context)
    return (time.perf_counter() - started) * 1e6


def router(ttl_s: float | None) -> Router:
    """A router over 20 deployments; ``ttl_s`` None: the default snapshot life."""
    policy = load_policy(default_policy_path())
    registry, signals, breakers = registry_with(20), Signals(), Breakers()
    built = Router(registry, signals, lambda: policy, breakers=breakers)
    if ttl_s is not None:
        built.decisions = DecisionSnapshots(registry, signals, breakers, ttl_s=ttl_s)
    return built


def measure(size: int) -> dict[str, list[float]]:
    """The three ways, a block of each in turn; then the paced one."""
    ways: dict[str, tuple[Router, Callable[[], list[Subtask]]]] = {
        "unshared": (router(0.0), lambda: subtasks(size)),
        "shared": (router(None), lambda: subtasks(size)),
        "shared_distinct": (router(None), lambda: subtasks(size, distinct=True)),
    }
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(ROUNDS // BLOCK):
        for name, (routing, plan) in ways.items():
            samples[name] += [timed(routing, plan()) for _ in range(BLOCK)]
    for name, (pace_s, count) in PACES.items():
        paced, plain = router(None), subtasks(size)
        samples[name] = []
        for _ in range(count):
            time.sleep(pace_s)
            samples[name].append(timed(paced, plain))
    return {name: values[len(values) // 10 :] for name, values in samples.items()}


def main() -> None:
    policy = load_policy(default_policy_path())
    load = os.getloadavg()
    result: dict[str, object] = {
        "deployments": 20,
        "policy": policy.version,
        "rules": len(policy.rules),
        "rounds": ROUNDS,
        "snapshot_ttl_ms": DEFAULT_TTL_S * 1000,
        "paces": {
            name: {"every_ms": pace * 1000, "requests": n} for name, (pace, n) in PACES.items()
        },
        "target_per_subtask_us": TARGET_US,
        "load_before": [round(x, 2) for x in load],
    }
    for size in (1, 10):
        for name, values in measure(size).items():
            stats = percentiles(values)
            per_subtask = {k: round(v / size, 2) for k, v in stats.items() if k != "n"}
            result[f"{name}_plan_{size}_us"] = stats
            result[f"{name}_plan_{size}_per_subtask_us"] = per_subtask
            print(
                f"{name:>15} plan of {size:>2}: p50 {stats['p50']:8.1f} µs  p99 "
                f"{stats['p99']:8.1f} µs  per subtask p50 {per_subtask['p50']:6.1f} µs "
                f"p99 {per_subtask['p99']:6.1f} µs (goal ≤ {TARGET_US:g} p50)"
            )
    result["control_us"] = found = controls()
    for name, stats in found.items():
        print(f"{'control ' + name:>24}: p50 {stats['p50']:8.1f} µs  p99 {stats['p99']:8.1f} µs")
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    print(f"wrote {write_result('decision', result)}")


if __name__ == "__main__":
    main()
