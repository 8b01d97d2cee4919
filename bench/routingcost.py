"""What scoring one prompt costs at serve time, per prompt length, for the bundled MMLU router.

Real MMLU prompts near 20, 150 (~200 MiniLM tokens) and 500 words, each scored once per round
with no cache, as a live request scores a new prompt:

- ``router``: the bundled router's own path (``LearnedRouter.score``: its features, its heads;
  no model run when it has no embedding features);
- ``table_first32``: the live scorer's shared feature table (``route/difficulty.py`` embeds
  the first 32 words once for every head, then the text and structure features, and the
  answer-choice features when the router reads them);
- ``table_whole_prompt``: the same with the whole prompt embedded, what a full-prompt
  embedding recipe would cost.

Bounded: ``PROMPTS`` x ``ROUNDS`` per length. ``python -m bench.routingcost`` re-measures and
updates the ``cost`` entry of ``bench/results/routing.json``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.harness import REPO, RESULTS, percentiles
from hybridinfer.models.embedder import Embedder
from hybridinfer.route.learned import (
    FeatureTable,
    LearnedRouter,
    bundled_router_path,
    choice_sets,
)
from hybridinfer.routertraining.embedding import open_embedder
from hybridinfer.routertraining.outcomes import default_data_dir, load_outcomes_dir

WORD_TARGETS = (20, 150, 500)
PROMPTS = 40
ROUNDS = 2
LIVE_EMBED_WORDS = 32


def measure_cost(prompts: list[str], embedder: Embedder) -> dict[str, Any]:
    """p50/p95/p99 milliseconds per prompt, by length."""
    router = LearnedRouter.load(bundled_router_path())
    words = np.asarray([len(prompt.split()) for prompt in prompts])
    FeatureTable.compute(["warm up"], embedder)
    paths: dict[str, Callable[[str], object]] = {
        "router": lambda p: router.score([p], embedder),
        "table_first32": lambda p: FeatureTable.compute(
            [p],
            embedder,
            embed_words=LIVE_EMBED_WORDS,
            choices=choice_sets(router.features),
        ),
        "table_whole_prompt": lambda p: FeatureTable.compute([p], embedder),
    }
    found: dict[str, Any] = {
        "router": router.card.get("recipe", {}).get("label", "?"),
        "router_embeds": "embedding" in router.features,
        "load_average_before": round(os.getloadavg()[0], 2),
        "by_words": {},
    }
    for target in WORD_TARGETS:
        nearest = np.argsort(np.abs(words - target), kind="stable")[:PROMPTS]
        chosen = [prompts[int(row)] for row in nearest]
        timings: dict[str, list[float]] = {name: [] for name in paths}
        # One path at a time: onnxruntime's threads spin on after a run and would bill the
        # next path's timing (interleaved, the router without a model measured 5x slower).
        for name, path in paths.items():
            for prompt in chosen * ROUNDS:
                started = time.perf_counter()
                path(prompt)
                timings[name].append(1000 * (time.perf_counter() - started))
        found["by_words"][str(target)] = {
            # MiniLM reads at most 256 tokens, so longer prompts count as 256 here.
            "tokens_median": int(np.median(embedder.count_tokens(chosen))),
            "words_median": int(np.median(words[nearest])),
            **{name: percentiles(samples) for name, samples in timings.items()},
        }
    found["load_average_after"] = round(os.getloadavg()[0], 2)
    return found


def main() -> None:
    outcomes = load_outcomes_dir(default_data_dir())
    embedder = open_embedder(REPO / ".hybridinfer" / "models")
    cost = measure_cost(outcomes.prompts, embedder)
    path = RESULTS / "routing.json"
    report = json.loads(path.read_text())
    report["cost"] = cost
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(cost, indent=2))


if __name__ == "__main__":
    main()
