"""Subject-held-out report of the learned router on RouteLLM's MMLU outcomes.

Outer loop: 5 folds over the 57 subjects; every fold's test subjects are never seen in
training. Inner loop: the recipe (features, target, regularisation) is chosen by APGR on
4 folds over the *training* subjects only, then refitted on all of them. Baselines: random,
prompt length, and the oracle (knows the outcomes; the ceiling).

Writes ``bench/results/routing.json`` and ``bench/results/routing.png``; prints a table.
Run: ``python -m bench.routing [--data-dir DIR] [--models-dir DIR]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import REPO, RESULTS, write_result
from hybridinfer.route.learned import FeatureTable
from hybridinfer.routertraining.deferral import (
    DeferralCurve,
    curve_metrics,
    deferral_curve,
    length_scores,
    oracle_scores,
    random_scores,
)
from hybridinfer.routertraining.embedding import open_embedder
from hybridinfer.routertraining.outcomes import default_data_dir, load_outcomes_dir
from hybridinfer.routertraining.training import (
    fit_router,
    group_folds,
    mean_metrics,
    select_candidate,
)

OUTER_FOLDS = 5
INNER_FOLDS = 4
ROUTERS = ("random", "length", "learned", "oracle")


def evaluate(data_dir: Path, models_dir: Path, cache_dir: Path) -> dict[str, Any]:
    outcomes = load_outcomes_dir(data_dir)
    embedder = open_embedder(models_dir)
    started = time.perf_counter()
    table = FeatureTable.compute(outcomes.prompts, embedder, cache_dir)
    feature_seconds = time.perf_counter() - started
    folds: list[dict[str, Any]] = []
    curves: dict[str, list[DeferralCurve]] = {name: [] for name in ROUTERS}
    for index, (train, test) in enumerate(group_folds(outcomes.groups, OUTER_FOLDS, seed=0)):
        fold_started = time.perf_counter()
        train_outcomes, test_outcomes = outcomes.subset(train), outcomes.subset(test)
        chosen, _ = select_candidate(table.rows(train), train_outcomes, folds=INNER_FOLDS)
        router = fit_router(table.rows(train), train_outcomes, chosen)
        train_seconds = time.perf_counter() - fold_started
        scores = {
            "random": random_scores(len(test_outcomes)),
            "length": length_scores(test_outcomes.prompts),
            "learned": router.score_features(table.rows(test)),
            "oracle": oracle_scores(test_outcomes.weak, test_outcomes.strong),
        }
        fold: dict[str, Any] = {
            "fold": index,
            "test_subjects": sorted(set(test_outcomes.groups)),
            "test_rows": len(test_outcomes),
            "chosen": chosen.label,
            "train_seconds": round(train_seconds, 1),
        }
        for name, score in scores.items():
            curve = deferral_curve(score, test_outcomes.weak, test_outcomes.strong)
            curves[name].append(curve)
            fold[name] = curve_metrics(curve)
        folds.append(fold)
        print(f"fold {index}: {chosen.label} ({train_seconds:.0f} s)", flush=True)
    return {
        "data": {
            "rows": len(outcomes),
            "subjects": len(set(outcomes.groups)),
            "weak_quality": round(float(outcomes.weak.mean()), 4),
            "strong_quality": round(float(outcomes.strong.mean()), 4),
        },
        "protocol": {
            "outer_folds": OUTER_FOLDS,
            "inner_folds": INNER_FOLDS,
            "split": "by subject",
            "selection": "mean inner APGR",
        },
        "feature_seconds": round(feature_seconds, 1),
        "mean": {name: mean_metrics([fold[name] for fold in folds]) for name in ROUTERS},
        "folds": folds,
        "curves": {name: mean_curve(found) for name, found in curves.items()},
    }


def mean_curve(curves: list[DeferralCurve]) -> dict[str, list[float]]:
    """Point-wise mean over folds (the points sit at the same score quantiles in each fold)."""
    return {
        "strong_share": np.mean([c.strong_share for c in curves], axis=0).round(4).tolist(),
        "quality": np.mean([c.quality for c in curves], axis=0).round(4).tolist(),
    }


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5.5))
    for name, curve in report["curves"].items():
        if name == "oracle":  # ~86 % at 18 % strong: it would flatten every other curve
            continue
        apgr = report["mean"][name]["apgr"]
        shares = [100 * share for share in curve["strong_share"]]
        qualities = [100 * quality for quality in curve["quality"]]
        axes.plot(shares, qualities, marker=".", label=f"{name} (APGR {apgr:.3f})")
    # Fold means, like the curves (pooled over all rows they differ by ~0.5 point).
    weak = 100 * report["curves"]["random"]["quality"][0]
    strong = 100 * report["curves"]["random"]["quality"][-1]
    axes.axhline(weak, color="grey", linestyle="--", label="weak only")
    axes.axhline(strong, color="red", linestyle="--", label="strong only")
    axes.axhline(0.95 * strong, color="red", linestyle=":", label="95 % of strong quality")
    axes.set_xlabel("Strong model calls (%)")
    axes.set_ylabel("Correct (%)")
    axes.set_title("MMLU deferral curves, subjects held out (mean of 5 folds)")
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def print_table(report: dict[str, Any]) -> None:
    header = f"{'router':<9} {'fold':<5} {'APGR':>7} {'CPT50':>7} {'CPT80':>7} {'@95%':>7}"
    print(header)
    print("-" * len(header))
    for name in ROUTERS:
        rows = [(str(fold["fold"]), fold[name]) for fold in report["folds"]]
        for label, metrics in [*rows, ("mean", report["mean"][name])]:
            print(
                f"{name:<9} {label:<5} {metrics['apgr']:>7.3f} {metrics['cpt50']:>7.3f} "
                f"{metrics['cpt80']:>7.3f} {metrics['strong_share_at_95']:>7.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--models-dir", type=Path, default=REPO / ".hybridinfer" / "models")
    parser.add_argument("--cache-dir", type=Path, default=REPO / ".hybridinfer" / "cache")
    args = parser.parse_args()
    started = time.perf_counter()
    report = evaluate(args.data_dir, args.models_dir, args.cache_dir)
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    plot(report, RESULTS / "routing.png")
    path = write_result("routing", report)
    print_table(report)
    print(f"wrote {path} and {RESULTS / 'routing.png'} in {report['total_seconds']} s")


if __name__ == "__main__":
    main()
