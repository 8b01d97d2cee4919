"""The local LLM's per-token loss and entropy on the prompt as router features
(``routertraining/llmsignal.py``), scored on the routing benchmark's folds.

One SmolLM2-135M pass costs a few hundred milliseconds per prompt on a shared core, so the
signal is measured on a fixed random sample of ``SAMPLE_SIZE`` prompts, not all 14,037. The
rows named ``sample/...`` are all fitted and scored on that sample only, within the same folds
(each fold's train and test masks restricted to the sample), so they compare with each other;
they do not compare digit for digit with the full-data rows.

Run the (resumable) pass alone first: ``python -m bench.routingllm [--cache-dir DIR]``;
``python -m bench.routing`` then reads it from the cache.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.harness import REPO, RESULTS
from hybridinfer.errors import ConfigError
from hybridinfer.route.learned import FeatureTable, FloatMatrix
from hybridinfer.routertraining.llmsignal import (
    FEATURES,
    MAX_TOKENS,
    LlamaScorer,
    Measured,
    cache_path,
    measure_prompts,
    prompt_key,
    read_cache,
)
from hybridinfer.routertraining.outcomes import default_data_dir, load_outcomes_dir
from hybridinfer.routertraining.training import TOPIC_FREE, Candidate, Ensemble, Recipe

SAMPLE_SIZE = 3000
SAMPLE_SEED = 0
THREADS = 1  # two spin-waiting threads on a shared core ran several times slower
SHIPPED = Candidate(TOPIC_FREE, "gain", 1e-2)
# name -> recipe; every one is fitted and scored on the sample rows of each fold.
LLM_RECIPES: dict[str, Recipe] = {
    "sample/" + SHIPPED.label: SHIPPED,
    "sample/llm/gain/C=0.01": Candidate(("llm",), "gain", 1e-2),
    "sample/llm/gain/C=1": Candidate(("llm",), "gain", 1.0),
    # the five loss features without the token count: is it more than length?
    "sample/loss/gain/C=0.01": Candidate(("loss",), "gain", 1e-2),
    "sample/text+structure+llm/gain/C=0.01": Candidate((*TOPIC_FREE, "llm"), "gain", 1e-2),
    "sample/text+structure+loss/gain/C=0.01": Candidate((*TOPIC_FREE, "loss"), "gain", 1e-2),
    "sample/shipped & llm": Ensemble((SHIPPED, Candidate(("llm",), "gain", 1e-2))),
}
LOSS_COLUMNS = [FEATURES.index(name) for name in FEATURES if name != "log_tokens"]


@dataclass
class LlmFeatureTable(FeatureTable):
    """A feature table with the LLM signal as one more set, ``llm``, and ``loss``, the same
    without the token count (bench-only; the live router has no such feature)."""

    llm: FloatMatrix | None = None

    def matrix(self, features: tuple[str, ...] | list[str]) -> FloatMatrix:
        """As ``FeatureTable.matrix``, ``llm`` included."""
        parts = []
        for name in features:
            if name in ("llm", "loss"):
                if self.llm is None:
                    raise ConfigError("this feature table has no LLM signal")
                parts.append(self.llm if name == "llm" else self.llm[:, LOSS_COLUMNS])
            else:
                parts.append(super().matrix((name,)))
        return np.hstack(parts)

    def rows(self, mask: npt.NDArray[np.bool_]) -> LlmFeatureTable:
        """The table restricted to the rows where ``mask`` is true."""
        base = super().rows(mask)
        return LlmFeatureTable(
            embedding=base.embedding,
            text=base.text,
            structure=base.structure,
            llm=None if self.llm is None else self.llm[mask],
        )


def sample_order(
    rows: int, size: int = SAMPLE_SIZE, seed: int = SAMPLE_SEED
) -> npt.NDArray[np.int64]:
    """The rows the LLM signal is measured on, in the order the pass takes them: a seeded
    permutation, so the first rows of a larger sample are a smaller one."""
    order: npt.NDArray[np.int64] = np.random.default_rng(seed).permutation(rows)[:size]
    return order


def sample_mask(rows: int, size: int = SAMPLE_SIZE) -> npt.NDArray[np.bool_]:
    """The sample as a row mask."""
    mask = np.zeros(rows, dtype=bool)
    mask[sample_order(rows, size)] = True
    return mask


def open_scorer(threads: int = THREADS) -> LlamaScorer:
    """SmolLM2 under llama.cpp; ``ConfigError`` when either is not installed."""
    from hybridinfer.server.llmserver import smollm2_path

    return LlamaScorer(smollm2_path(), threads=threads)


MIN_CACHED = 200
"""The fewest cached prompts the sample's rows are measured on: 9 folds of a smaller sample
leave some test fold with too few prompts of one outcome for a curve."""


def cached_prefix(prompts: list[str], cache_dir: Path, fingerprint: str, size: int) -> int:
    """How many of the sample's first rows (in pass order) are already in the cache."""
    cached = read_cache(cache_path(cache_dir, fingerprint))
    for done, row in enumerate(sample_order(len(prompts), size)):
        if prompt_key(fingerprint, prompts[row]) not in cached:
            return done
    return size


def measure_sample(
    prompts: list[str],
    cache_dir: Path,
    size: int = SAMPLE_SIZE,
    cached_only: bool = False,
    threads: int = THREADS,
) -> tuple[Measured | None, str]:
    """The LLM signal of the sample's prompts (in row order), or None and why not.
    ``cached_only`` shrinks the sample to its first rows already measured (a pass still
    running elsewhere), computing nothing."""
    try:
        scorer = open_scorer(threads)
    except ConfigError as error:
        return None, str(error)
    if cached_only:
        size = cached_prefix(prompts, cache_dir, scorer.fingerprint, size)
        if size < MIN_CACHED:
            return None, (
                f"{size} prompts of the sample are in the cache folder (at least {MIN_CACHED} "
                "are needed for the folds): run `python -m bench.routingllm` first"
            )
    order = sample_order(len(prompts), size)
    measured = measure_prompts(scorer, [prompts[row] for row in order], cache_dir)
    by_row = np.argsort(order)
    return (
        Measured(
            features=measured.features[by_row],
            seconds=measured.seconds[by_row],
            tokens=measured.tokens[by_row],
        ),
        scorer.fingerprint,
    )


def sample_table(
    table: FeatureTable, mask: npt.NDArray[np.bool_], llm: FloatMatrix
) -> LlmFeatureTable:
    """The sample's rows of ``table`` with the LLM signal beside them."""
    base = table.rows(mask)
    return LlmFeatureTable(
        embedding=base.embedding, text=base.text, structure=base.structure, llm=llm
    )


def cost_summary(measured: Measured) -> dict[str, Any]:
    """Seconds per pass, p50 and p99, overall and by prompt length (tokens scored)."""
    buckets = {"all": np.ones(len(measured.tokens), dtype=bool)}
    edges = (0, 32, 64, 96, MAX_TOKENS)
    for low, high in pairwise(edges):
        buckets[f"{low + 1}-{high}"] = (measured.tokens > low) & (measured.tokens <= high)
    summary: dict[str, Any] = {
        "max_tokens": MAX_TOKENS,
        "timed": "as the cached pass ran, on a shared machine; --cost times fixed threads",
    }
    for name, rows in buckets.items():
        if rows.any():
            seconds = measured.seconds[rows]
            summary[name] = {
                "prompts": int(rows.sum()),
                "p50_ms": round(float(np.percentile(seconds, 50)) * 1000, 1),
                "p99_ms": round(float(np.percentile(seconds, 99)) * 1000, 1),
            }
    summary["features"] = list(FEATURES)
    return summary


def measure_pass_cost(
    prompts: list[str], lengths: tuple[int, ...] = (50, 128, 200), repeats: int = 20
) -> dict[str, Any]:
    """Milliseconds of one scoring pass (tokenize, evaluate, features) at fixed token counts,
    with one and two threads: the serve-time cost the live router would pay."""
    import os

    from hybridinfer.routertraining.llmsignal import summarise_losses, token_losses
    from hybridinfer.server.llmserver import smollm2_path

    text = " ".join(prompt for prompt in prompts if len(prompt.split()) > 300)[:20000]
    report: dict[str, Any] = {"load_average_before": round(os.getloadavg()[0], 2)}
    for threads in (1, 2):
        scorer = LlamaScorer(smollm2_path(), threads=threads, context=max(lengths))
        for length in lengths:
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                window = scorer.tokenize(text[: 8 * length])[:length]
                nll, entropy = token_losses(scorer.logits(window), window)
                summarise_losses(nll, entropy, len(window))
                times.append(time.perf_counter() - started)
            report[f"threads={threads}/tokens={length}"] = {
                "p50_ms": round(float(np.percentile(times, 50)) * 1000, 1),
                "p99_ms": round(float(np.percentile(times, 99)) * 1000, 1),
                "n": repeats,
            }
    report["load_average_after"] = round(os.getloadavg()[0], 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--cache-dir", type=Path, default=REPO / ".hybridinfer" / "cache")
    parser.add_argument("--threads", type=int, default=THREADS, help="llama.cpp threads")
    parser.add_argument(
        "--cost", action="store_true", help="time single passes at 50, 128 and 200 tokens"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.cost:
        cost = measure_pass_cost(load_outcomes_dir(args.data_dir).prompts)
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "routingllm-cost.json").write_text(json.dumps(cost, indent=2) + "\n")
        print(cost)
        return
    measured, why = measure_sample(
        load_outcomes_dir(args.data_dir).prompts, args.cache_dir, threads=args.threads
    )
    if measured is None:
        raise SystemExit(f"no LLM signal: {why}")
    print(cost_summary(measured), f"{time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
