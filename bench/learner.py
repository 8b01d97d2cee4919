"""The online learner: regret in a drifting world and on MMLU outcomes; time per decision.

1. Drifting simulation (``learning/simulation.py``), decisions by the real ``Router`` with
   its learner: a local and a cloud deployment; halfway the cloud model's quality rises (or
   the local node degrades). Cumulative regret of the learner and of the static policy
   against the best fixed policy in hindsight, and the learner's against the static policy.
2. MMLU (``../shared/data/routellm-mmlu``, both models' real outcomes per question): the weak
   model as the local tier, the strong as the cloud, questions in a shuffled order, bandit
   feedback (only the chosen model's outcome is seen). Latency and cost are assumed figures
   (stated in the JSON); quality is the real outcome. Context: the prompt's length rank
   (the policy's ``words`` signal), not the MiniLM router, to keep the bench light.
3. ``Router.decide`` with and without the learner (learning on, trained, explore 0.02).

Writes ``bench/results/learner.json`` and ``bench/results/learner.png``.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.harness import RESULTS, write_result
from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import Deployment, Node, TensorSpec, Tier, Zone
from hybridinfer.learning.bandit import Outcome
from hybridinfer.learning.engine import Learners
from hybridinfer.learning.simulation import ArmWorld, DriftingWorld, Trajectory, World, run
from hybridinfer.policy.document import CompiledPolicy, compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.routertraining.outcomes import default_data_dir, load_outcomes_dir
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry

LEARNING = "{enabled: true, explore: 0.1, min_samples: 10, half_life: 150}"
"""The acceptance test's block (``tests/learning/test_simulation.py``); 0.05 is run too."""
EXPLORES = (0.1, 0.05)
SEEDS = (1, 2, 3, 4, 5)
STEPS, SWITCH = 4000, 2000
LOCAL, CLOUD = "local/small:1", "cloud-1/large:1"


def deployment(
    node_id: str, model: str, quality: float, latency_ms: float, cost: float
) -> Deployment:
    return Deployment(
        node_id=node_id,
        model=model,
        version="1",
        capability="text-classification",
        task="sentiment",
        quality=quality,
        latency_ms=latency_ms,
        labels=["negative", "positive"],
        inputs=[TensorSpec("text", "BYTES", [-1, 1])],
        cost_per_call=cost,
    )


def two_tiers(local: tuple[float, float, float], cloud: tuple[float, float, float]) -> NodeRegistry:
    """(quality, latency_ms, cost) as registered: what the static policy scores."""
    registry = NodeRegistry()
    registry.add(
        Node(
            "local",
            Tier.LOCAL,
            Zone.PRIVATE,
            "http://local",
            "onnx",
            [deployment("local", "small", *local)],
        )
    )
    registry.add(
        Node(
            "cloud-1",
            Tier.CLOUD,
            Zone.PUBLIC,
            "http://cloud-1",
            "v2",
            [deployment("cloud-1", "large", *cloud)],
        )
    )
    return registry


@dataclass
class Player:
    """The real router (with or without its learner) as a chooser and learner for ``run``."""

    router: Router
    learners: Learners | None
    prefer: str = "balanced"
    last: Any = None

    def choose(self, _step: int, difficulty: float) -> str:
        subtask = Subtask(
            id="s", capability="text-classification", task="sentiment", inputs={}, size=200
        )
        subtask.difficulty = difficulty
        context = self.router.context(RouteOptions(prefer=self.prefer), "sentiment", "bench")  # type: ignore[arg-type]
        self.last = self.router.decide(subtask, context)
        return str(self.last.chosen.deployment.id)

    def learn(self, arm: str, _difficulty: float, outcome: Outcome) -> None:
        record = self.last.learning
        if self.learners is None or record is None:
            return
        row = {
            "capability": record["capability"],
            "arm": arm,
            "context": record["context"],
            "public": record["public"],
            "quality": outcome.quality,
            "latency": outcome.latency,
            "cost": outcome.cost,
            "key_id": "bench",
        }
        self.learners.apply(row)


def player(
    registry: NodeRegistry, learning: str | None, seed: int, prefer: str = "balanced"
) -> Player:
    policy: CompiledPolicy = compile_policy(
        f"version: bench-1\nlearning: {learning or '{enabled: false}'}\n"
    )
    learners = None if learning is None else Learners(lambda: policy.policy.learning, seed=seed)
    return Player(Router(registry, Signals(), lambda: policy, learners=learners), learners, prefer)


def regrets(learned: Trajectory, static: Trajectory) -> dict[str, Any]:
    best = learned.best_fixed()
    return {
        "best_fixed_arm": best,
        "learner_vs_best_fixed": learned.regret_against(best),
        "static_vs_best_fixed": static.regret_against(best),
        "learner_vs_static": [
            a - b for a, b in zip(static.cumulative(), learned.cumulative(), strict=True)
        ],
    }


WORLDS = {
    "cloud_quality_rises": DriftingWorld(
        arms={
            LOCAL: ArmWorld(quality=0.7, latency_ms=2.0),
            CLOUD: ArmWorld(quality=0.45, quality_after=0.97, latency_ms=80.0, cost=0.0002),
        },
        switch_at=SWITCH,
    ),
    "local_node_degrades": DriftingWorld(
        arms={
            LOCAL: ArmWorld(quality=0.9, quality_after=0.3, latency_ms=2.0, latency_after_ms=400.0),
            CLOUD: ArmWorld(quality=0.8, latency_ms=80.0, cost=0.0002),
        },
        switch_at=SWITCH,
    ),
}
WEIGHTS = {"balanced": (1.0, 1.0, 1.0), "quality": (1.0, 0.25, 0.25)}


def drifting(explore: float) -> dict[str, Any]:
    block = LEARNING.replace("explore: 0.1", f"explore: {explore}")
    out: dict[str, Any] = {"learning": block}
    for name, world in WORLDS.items():
        finals: dict[str, list[float]] = {}
        curves: dict[str, Any] = {}
        follow: list[int] = []
        for seed in SEEDS:
            registry = two_tiers((0.7, 2.0, 0.0), (0.8, 80.0, 0.0002))
            learned = run(
                world,
                STEPS,
                *_bind(player(registry, block, seed)),
                WEIGHTS["balanced"],
                seed=seed,
            )
            static = run(
                world, STEPS, *_bind(player(registry, None, seed)), WEIGHTS["balanced"], seed=seed
            )
            found = regrets(learned, static)
            for key in ("learner_vs_best_fixed", "static_vs_best_fixed", "learner_vs_static"):
                finals.setdefault(key, []).append(round(found[key][-1], 2))
            curves = curves or found
            follow.append(_followed_after(learned, CLOUD))
        out[name] = {
            "final_regret_mean": {k: round(statistics.mean(v), 2) for k, v in finals.items()},
            "final_regret_by_seed": finals,
            "requests_until_80pct_share_after_switch": follow,
            "curve_seed_1": {k: v[::20] for k, v in curves.items() if isinstance(v, list)},
            "best_fixed_arm": curves["best_fixed_arm"],
        }
    return out


def _bind(p: Player) -> tuple[Any, Any]:
    return p.choose, p.learn


def _followed_after(trajectory: Trajectory, arm: str, window: int = 50) -> int:
    """Requests after the switch until a 50-request window first chose ``arm`` ≥ 80 %."""
    for start in range(SWITCH, STEPS - window):
        if trajectory.share(arm, start, start + window) >= 0.8:
            return start + window - SWITCH
    return -1


@dataclass
class MmluWorld:
    """Each question's real outcome for both models; assumed latency and cost per tier."""

    weak: np.ndarray
    strong: np.ndarray
    rank: np.ndarray
    latency_ms: tuple[float, float] = (200.0, 600.0)
    cost: tuple[float, float] = (0.0, 0.002)

    @property
    def arms(self) -> list[str]:
        return [LOCAL, CLOUD]

    def truth(self, arm: str, step: int, _difficulty: float) -> Outcome:
        tier = 0 if arm == LOCAL else 1
        right = (self.weak if tier == 0 else self.strong)[step]
        return Outcome(
            quality=float(right),
            latency=1.0 - self.latency_ms[tier] / 1000.0,
            cost=1.0 - self.cost[tier] / 0.01,
        )

    def sample(self, arm: str, step: int, difficulty: float, _rng: random.Random) -> Outcome:
        return self.truth(arm, step, difficulty)


def mmlu() -> dict[str, Any]:
    outcomes = load_outcomes_dir(default_data_dir())
    order = np.random.default_rng(0).permutation(len(outcomes))
    lengths = np.asarray([len(outcomes.prompts[i]) for i in order], dtype=float)
    rank = lengths.argsort().argsort() / max(1, len(lengths) - 1)
    world: World = MmluWorld(outcomes.weak[order], outcomes.strong[order], rank)
    registry = two_tiers(
        (float(outcomes.weak.mean()), 200.0, 0.0), (float(outcomes.strong.mean()), 600.0, 0.002)
    )
    out: dict[str, Any] = {
        "questions": len(outcomes),
        "assumed": {"latency_ms": [200, 600], "cost": [0.0, 0.002], "cost_scale": 0.01},
    }
    for prefer in ("balanced", "quality"):
        difficulties = list(rank)
        learned_player = player(registry, LEARNING, 1, prefer)
        learned = run(
            world,
            len(outcomes),
            *_bind(learned_player),
            WEIGHTS[prefer],
            seed=1,
            difficulties=difficulties,
        )
        static = run(
            world,
            len(outcomes),
            *_bind(player(registry, None, 1, prefer)),
            WEIGHTS[prefer],
            seed=1,
            difficulties=difficulties,
        )
        found = regrets(learned, static)
        out[prefer] = {
            "best_fixed_arm": found["best_fixed_arm"],
            "static_arm": static.chosen[0],
            "final_regret": {k: round(v[-1], 2) for k, v in found.items() if isinstance(v, list)},
            "cloud_share_learner": round(learned.share(CLOUD, 0, len(outcomes)), 4),
            "accuracy_learner": round(
                statistics.mean(
                    r[c] for r, c in zip(_quality(world, learned), learned.chosen, strict=True)
                ),
                4,
            ),
            "curve": {k: v[::100] for k, v in found.items() if isinstance(v, list)},
        }
    return out


def _quality(world: World, trajectory: Trajectory) -> list[dict[str, float]]:
    return [
        {arm: world.truth(arm, step, 0.0).quality for arm in world.arms}
        for step in range(len(trajectory.chosen))
    ]


def decision_time() -> dict[str, Any]:
    registry = two_tiers((0.7, 2.0, 0.0), (0.8, 80.0, 0.0002))
    off, on = (
        player(registry, None, 1),
        player(registry, "{enabled: true, explore: 0.02, min_samples: 10}", 1),
    )
    assert on.learners is not None
    for _ in range(200):  # a trained learner: both arms past min_samples
        for arm, public in ((LOCAL, False), (CLOUD, True)):
            on.learners.apply(
                {
                    "capability": "text-classification",
                    "arm": arm,
                    "context": [1.0, 0.5, 0.5, 0.4],
                    "public": public,
                    "quality": 0.8,
                    "latency": 0.9,
                    "cost": 0.99,
                    "key_id": "b",
                }
            )
    rounds, repeats = 3000, 15
    timings: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(repeats):
        for name, chosen in (("off", off), ("on", on)):
            started = time.perf_counter()
            for _ in range(rounds):
                chosen.choose(0, 0.5)
            timings[name].append((time.perf_counter() - started) / rounds * 1e6)
    off_us, on_us = min(timings["off"]), min(timings["on"])
    return {
        "us_per_decision_off": round(off_us, 2),
        "us_per_decision_on": round(on_us, 2),
        "added_us": round(on_us - off_us, 2),
        "median_us_off": round(statistics.median(timings["off"]), 2),
        "median_us_on": round(statistics.median(timings["on"]), 2),
        "goal_added_us": 20.0,
        "rounds": rounds,
        "repeats": repeats,
        "note": "context + decide of one subtask over 2 candidates; the fastest of the "
        "interleaved repeats (timeit's rule: the others measure the machine's other work)",
    }


def figure(result: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drift = result["drifting"]["explore_0.1"]
    panels = [
        (f"drift: {name}", data["curve_seed_1"], 20)
        for name, data in drift.items()
        if isinstance(data, dict)
    ]
    panels += [
        (f"MMLU, prefer={p}", result["mmlu"][p]["curve"], 100) for p in ("balanced", "quality")
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for axis, (title, curves, every) in zip(axes, panels, strict=True):
        for key, values in curves.items():
            axis.plot([i * every for i in range(len(values))], values, label=key.replace("_", " "))
        axis.axhline(0.0, color="grey", linewidth=0.5)
        axis.set_xlabel("requests")
        axis.set_ylabel("cumulative regret (reward)")
        axis.set_title(title)
        axis.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "learner.png", dpi=100)
    plt.close(fig)


def main() -> None:
    load_before = os.getloadavg()
    result = {
        "drifting": {f"explore_{e}": drifting(e) for e in EXPLORES},
        "mmlu": mmlu(),
        "decision_time": decision_time(),
    }
    result["load_average"] = {
        "before": [round(x, 2) for x in load_before],
        "after": [round(x, 2) for x in os.getloadavg()],
    }
    path = write_result("learner", result)
    figure(result)
    for explore, worlds in result["drifting"].items():
        for name, data in worlds.items():
            if isinstance(data, dict):
                follow = data["requests_until_80pct_share_after_switch"]
                print(explore, name, data["final_regret_mean"], "follow:", follow)
    for prefer in ("balanced", "quality"):
        print(
            "mmlu",
            prefer,
            result["mmlu"][prefer]["final_regret"],
            "cloud share",
            result["mmlu"][prefer]["cloud_share_learner"],
        )
    print("decision", result["decision_time"])
    print("load average", result["load_average"], "→", path)


if __name__ == "__main__":
    main()
