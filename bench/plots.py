"""The figures of ``docs/benchmarks.md``, drawn from ``bench/results/latest.json`` alone.

``routing.png`` and ``cascade.png`` are drawn by their own benches during the run; the others
are drawn here. Each function returns nothing when its section did not produce a result.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # the backend is chosen first

COLOURS = {"direct": "tab:grey", "hybridinfer": "tab:blue", "litellm": "tab:red"}


def label(axis: Any, x: str, y: str, title: str) -> None:
    axis.set_xlabel(x)
    axis.set_ylabel(y)
    axis.set_title(title)
    axis.legend()


def save(figure: Any, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def result_of(latest: dict[str, Any], name: str) -> dict[str, Any] | None:
    section = latest["sections"].get(name) or {}
    if section.get("status") != "ok":
        return None
    result: dict[str, Any] = section["result"]
    return result


def gateway_figure(result: dict[str, Any], path: Path) -> None:
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for target in ("direct", "hybridinfer", "litellm"):
        rows = [r for r in result["fixed_rates"] if r["target"] == target and r["latency_ms"]]
        if not rows:
            continue
        for axis, quantile in zip(axes[:2], ("p50", "p99"), strict=True):
            axis.plot(
                [r["rate"] for r in rows],
                [r["latency_ms"][quantile] for r in rows],
                marker="o",
                color=COLOURS[target],
                label=target,
            )
    for axis, quantile in zip(axes[:2], ("p50", "p99"), strict=True):
        axis.set_xscale("log")
        axis.set_yscale("log")
        label(
            axis,
            "offered load (requests/s, open loop)",
            f"{quantile} latency from scheduled send (ms)",
            f"{quantile} latency, same upstream",
        )
    names = [name for name in ("direct", "hybridinfer", "litellm") if name in result["sustained"]]
    rates = [result["sustained"][name]["sustained_rps"] for name in names]
    axes[2].bar(names, rates, color=[COLOURS[name] for name in names])
    axes[2].set_yscale("log")
    axes[2].set_ylabel("highest sustained rate (requests/s)")
    axes[2].set_title("< 1 % errors and p99 < 1 s")
    for index, rate in enumerate(rates):
        axes[2].text(index, rate, f"{rate:.0f}", ha="center", va="bottom")
    save(figure, path)


def throughput_figure(result: dict[str, Any], path: Path) -> None:
    figure, axis = plt.subplots(figsize=(7, 4.5))
    ways = sorted({(run["concurrency"], run.get("inline", False)) for run in result["runs"]})
    for concurrency, inline in ways:
        runs = sorted(
            (
                r
                for r in result["runs"]
                if r["concurrency"] == concurrency and r.get("inline", False) == inline
            ),
            key=lambda r: r["max_batch_size"],
        )
        axis.plot(
            [r["max_batch_size"] for r in runs],
            [r["throughput_per_s"] for r in runs],
            marker="o",
            linestyle="-" if inline else "--",
            label=f"{concurrency} callers, lone call {'on the loop' if inline else 'on a thread'}",
        )
    axis.axhline(result["target_per_s"], color="red", linestyle=":", label="target")
    axis.set_xscale("log", base=2)
    label(axis, "max micro-batch size", "inferences/s (one text per request)", "Node throughput")
    save(figure, path)


def tier_figure(result: dict[str, Any], path: Path) -> None:
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for tier, data in result["tiers"].items():
        samples = sorted(data["samples_ms"])
        shares = [(index + 1) / len(samples) for index in range(len(samples))]
        axis.plot(samples, shares, label=f"{tier} (p50 {data['client_ms']['p50']:.2f} ms)")
    axis.set_xscale("log")
    title = "sentiment through the gateway: local tier vs cloud node"
    label(axis, "client latency (ms)", "share of requests", title)
    save(figure, path)


def llm_figure(result: dict[str, Any], path: Path) -> None:
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    names = [f"{tier['tier']}\n{tier['model']}" for tier in result["tiers"]]
    positions = range(len(names))
    for axis, metric, title in (
        (axes[0], "ttft_ms", "time to first token (ms, median)"),
        (axes[1], "tokens_per_s", "tokens/s (median)"),
    ):
        for offset, path_name in ((-0.2, "direct"), (0.2, "gateway")):
            axis.bar(
                [p + offset for p in positions],
                [tier[path_name][metric] for tier in result["tiers"]],
                width=0.4,
                label=path_name,
            )
        axis.set_xticks(list(positions), names)
        label(axis, "", "", title)
    save(figure, path)


FIGURES: dict[str, tuple[str, Callable[[dict[str, Any], Path], None] | None]] = {
    "gateway_overhead": ("gateway_overhead.png", gateway_figure),
    "routing": ("routing.png", None),
    "cascade": ("cascade.png", None),
    "node_throughput": ("node_throughput.png", throughput_figure),
    "tier_latency": ("tier_latency.png", tier_figure),
    "llm": ("llm.png", llm_figure),
}


def draw_all(latest: dict[str, Any], directory: Path) -> dict[str, Path]:
    """Every figure whose section succeeded; section name → PNG path."""
    drawn = {}
    for name, (file_name, draw) in FIGURES.items():
        result = result_of(latest, name)
        if result is None:
            continue
        path = directory / file_name
        if draw is not None:
            draw(result, path)
        if path.exists():
            drawn[name] = path
    return drawn
