"""Confidence cascades on the held-out test split: small model first, escalate to the large one.

For each task (sentiment, digits) this reports the test accuracy of the small model alone, the
large model alone, the cascade at thresholds chosen from the small model's calibration-split
quantiles (target cloud shares 10..50 %), and the oracle router that escalates exactly the
rows the large model alone gets right. Inference runs in onnxruntime, as served.

    python -m bench.cascade [--models DIR]

Writes ``bench/results/cascade.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.harness import RESULTS, write_result
from hybridinfer.modelzoo import ModelCard, build_models
from hybridinfer.modelzoo.build import open_session, predict
from hybridinfer.modelzoo.datasets import Splits, digit_splits, sentiment_splits

TARGET_SHARES = (0.1, 0.2, 0.3, 0.4, 0.5)
SPLITS = {"sentiment": sentiment_splits, "digits": digit_splits}


def run_model(models: Path, card: ModelCard, x: NDArray[Any]) -> tuple[NDArray[Any], ...]:
    """Labels and max probabilities of one built model on ``x``."""
    session = open_session(models / card.name / card.version / "model.onnx")
    labels, probabilities = predict(session, x)
    return labels, probabilities.max(axis=1)


def row(policy: str, target: float | None, share: float, accuracy: float) -> dict[str, Any]:
    return {
        "policy": policy,
        "target_cloud_share": target,
        "cloud_share": round(share, 4),
        "accuracy": round(accuracy, 4),
    }


def evaluate(models: Path, cards: dict[str, ModelCard], task: str) -> dict[str, Any]:
    """Every policy's realised cloud share and test accuracy for one task."""
    splits: Splits = SPLITS[task]()
    small_card, large_card = cards[f"{task}-small"], cards[f"{task}-large"]
    small, confidence = run_model(models, small_card, splits.x_test)
    large, _ = run_model(models, large_card, splits.x_test)
    truth = splits.y_test
    small_right, large_right = small == truth, large == truth
    rows = [
        row("small only", 0.0, 0.0, small_right.mean()),
        row("large only", 1.0, 1.0, large_right.mean()),
    ]
    for target in TARGET_SHARES:
        # What a router does: turn "send X % to the cloud" into a threshold from the card.
        threshold = small_card.calibration.threshold_for_cloud_share(target)
        escalate = confidence < threshold
        answer = np.where(escalate, large, small)
        rows.append(
            row(f"cascade <{threshold:.3f}", target, escalate.mean(), (answer == truth).mean())
        )
    oracle = ~small_right & large_right
    rows.append(row("oracle router", None, oracle.mean(), (small_right | large_right).mean()))
    return {
        "task": task,
        "n_test": len(truth),
        "small": small_card.name,
        "large": large_card.name,
        "rows": rows,
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"\n{result['task']}: {result['small']} -> {result['large']}, n_test={result['n_test']}")
    print(f"  {'policy':<20} {'target':>7} {'cloud':>7} {'accuracy':>9}")
    for entry in result["rows"]:
        target = entry["target_cloud_share"]
        shown = "-" if target is None else f"{target:.0%}"
        print(
            f"  {entry['policy']:<20} {shown:>7} {entry['cloud_share']:>7.1%} "
            f"{entry['accuracy']:>9.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=Path, default=Path(".hybridinfer/models"))
    args = parser.parse_args()
    cards = {card.name: card for card in build_models(args.models)}
    results = [evaluate(args.models, cards, task) for task in SPLITS]
    for result in results:
        print_table(result)
    path = write_result(
        "cascade",
        {
            "models": {
                name: {
                    "description": card.description,
                    "accuracy": card.metrics.accuracy,
                    "latency_ms": card.latency_ms.model_dump(),
                    "recipe": card.recipe,
                    "sha256": card.sha256,
                }
                for name, card in cards.items()
            },
            "results": results,
        },
    )
    print(f"\nwrote {path}")
    print(f"wrote {plot(results)}")


def plot(results: list[dict[str, Any]]) -> Path:
    """Deferral curves: accuracy against the share of calls sent to the large model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4))
    for axis, result in zip(np.atleast_1d(axes), results, strict=True):
        rows = result["rows"]
        curve = sorted(
            (r["cloud_share"], r["accuracy"])
            for r in rows
            if r["policy"].startswith(("cascade", "small", "large"))
        )
        axis.plot(*zip(*curve, strict=True), marker="o", label="confidence cascade")
        ends = [r for r in rows if r["policy"] in ("small only", "large only")]
        axis.plot(
            [r["cloud_share"] for r in ends],
            [r["accuracy"] for r in ends],
            linestyle="--",
            label="random split (linear)",
        )
        oracle = [r for r in rows if r["policy"].startswith("oracle")]
        if oracle:
            axis.scatter([oracle[0]["cloud_share"]], [oracle[0]["accuracy"]], label="oracle")
        axis.set_title(f"{result['task']} (n={result['n_test']}, held-out test split)")
        axis.set_xlabel("share of calls sent to the large (cloud) model")
        axis.set_ylabel("accuracy")
        axis.legend()
    figure.tight_layout()
    path = RESULTS / "cascade.png"
    figure.savefig(path, dpi=110)
    return path


if __name__ == "__main__":
    main()
