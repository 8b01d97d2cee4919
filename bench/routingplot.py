"""The routing benchmark's figure: deferral curves (subjects held out) and APGR per fold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CURVES = ("random", "length", "previous", "chosen", "text+structure/gain/C=0.01")
"""Beside the shipped recipe (the one whose cost was measured), drawn too."""


def plot(report: dict[str, Any], path: Path) -> None:
    """Left: mean deferral curves of the baselines, the previous recipes, ``chosen`` and the
    shipped recipe; right: every router's APGR in each fold of every protocol (the spread the
    means hide)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    subjects = report["protocols"]["subjects"]
    figure, (curves, spread) = plt.subplots(
        1, 2, figsize=(15, 6), gridspec_kw={"width_ratios": [1, 1.3]}
    )
    shipped = report["cost"]["router"]
    for name in dict.fromkeys((*CURVES, shipped)):
        curve = subjects["curves"][name]
        apgr = subjects["summary"][name]["apgr"]["mean"]
        shares = [100 * share for share in curve["strong_share"]]
        qualities = [100 * quality for quality in curve["quality"]]
        curves.plot(shares, qualities, marker=".", label=f"{name} (APGR {apgr:.3f})")
    weak = 100 * subjects["curves"]["random"]["quality"][0]
    strong = 100 * subjects["curves"]["random"]["quality"][-1]
    curves.axhline(weak, color="grey", linestyle="--", label="weak only")
    curves.axhline(strong, color="red", linestyle="--", label="strong only")
    curves.axhline(0.95 * strong, color="red", linestyle=":", label="95 % of strong quality")
    curves.set_xlabel("Strong model calls (%)")
    curves.set_ylabel("Correct (%)")
    curves.set_title("MMLU, subject groups held out (mean of 5 folds)")
    curves.legend(loc="lower right", fontsize=8)

    routers = [name for name in subjects["summary"] if name != "oracle"]
    shown = [("subjects", "o"), ("categories", "s"), ("formats", "^")]
    for offset, (protocol, marker) in enumerate(
        (name, marker) for name, marker in shown if name in report["protocols"]
    ):
        summary = report["protocols"][protocol]["summary"]
        for row, name in enumerate(routers):
            if name not in summary:  # the LLM sample's rows have no format-shift protocol
                continue
            values = summary[name]["apgr"]["per_fold"]
            spread.scatter(
                values,
                [row + 0.18 * (offset - 0.5)] * len(values),
                marker=marker,
                s=18,
                color=f"C{offset}",
                label=protocol if row == 0 else None,
            )
            spread.plot(summary[name]["apgr"]["mean"], row + 0.18 * (offset - 0.5), "k|", ms=9)
    spread.axvline(0.65, color="red", linestyle=":", label="goal 0.65")
    spread.set_yticks(range(len(routers)), routers, fontsize=7)
    spread.set_xlabel("APGR per held-out fold (| = mean)")
    spread.set_title("APGR per fold: subjects, categories, without choices")
    spread.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
