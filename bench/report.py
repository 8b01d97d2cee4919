"""``docs/benchmarks.md`` from ``bench/results/latest.json``: every figure from one run.

Each target is stated next to its figure with a plain "met" or "missed"; a section that did
not run or failed says so instead of showing an older number.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import REPO

DOCUMENT = REPO / "docs" / "benchmarks.md"
Lines = list[str]


def verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"


def table(header: list[str], rows: list[list[Any]]) -> Lines:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def figure(figures: dict[str, Path], name: str, document: Path, caption: str) -> Lines:
    path = figures.get(name)
    if path is None:
        return []
    return [f"![{caption}]({os.path.relpath(path, document.parent)})", ""]


# --- 1. gateway overhead -----------------------------------------------------------------------
def added_at(result: dict[str, Any], target: str, rate: float) -> dict[str, Any] | None:
    return next(
        (row for row in result["added_ms"] if row["target"] == target and row["rate"] == rate),
        None,
    )


def gateway_targets(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for the three gateway targets."""
    checks: list[tuple[str, str, bool]] = []
    ours = added_at(result, "hybridinfer", 300)
    if ours is not None:
        checks.append(
            (
                "hybridinfer added latency at 300 RPS: p50 ≤ 1 ms, p99 ≤ 5 ms",
                f"p50 {ms(ours['p50'])}, p99 {ms(ours['p99'])}",
                ours["sustained"] and ours["p50"] <= 1.0 and ours["p99"] <= 5.0,
            )
        )
    theirs = [row for row in result["added_ms"] if row["target"] == "litellm" and row["sustained"]]
    pairs = [(added_at(result, "hybridinfer", row["rate"]), row) for row in theirs]
    compared = [(o, t) for o, t in pairs if o is not None]
    if compared:
        measured = "; ".join(
            f"{t['rate']:.0f} RPS: p50 {o['p50']:.2f} vs {t['p50']:.2f} ms, "
            f"p99 {o['p99']:.2f} vs {t['p99']:.2f} ms"
            for o, t in compared
        )
        ok = all(o["p50"] <= t["p50"] / 10 and o["p99"] <= t["p99"] / 10 for o, t in compared)
        checks.append(("added latency ≤ 1/10 of LiteLLM's where LiteLLM sustains", measured, ok))
    sustained = result["sustained"]
    if "litellm" in sustained and "hybridinfer" in sustained:
        ours_rps = sustained["hybridinfer"]["sustained_rps"]
        theirs_rps = sustained["litellm"]["sustained_rps"]
        ratio = ours_rps / theirs_rps if theirs_rps else float("inf")
        checks.append(
            (
                "sustained rate ≥ 10x LiteLLM's",
                f"{ours_rps:.0f} vs {theirs_rps:.0f} RPS ({ratio:.1f}x)",
                ratio >= 10,
            )
        )
    return checks


def gateway_section(result: dict[str, Any]) -> Lines:
    lines = [
        "Setup: one minimal OpenAI-style upstream (`bench/upstream.py`: a bare asyncio server "
        "answering every chat completion with the same tiny reply) called directly, through "
        "`hybridinfer gateway --config` (one static `openai` node on it, model pinned, API key "
        "checked, traces and metrics on) and through LiteLLM's proxy "
        f"{result.get('litellm_version') or '(not run)'} (one worker, one `model_list` entry "
        "on the upstream, master key, no database, no callbacks). The same open-loop generator "
        "(`bench/loadgen.py`, its own process) drives all three; latency counts from each "
        "request's *scheduled* send time. At each rate the three run back to back, so machine "
        "noise falls on all alike; the sustained-rate searches are interleaved the same way.",
        "",
    ]
    rows = []
    for row in result["fixed_rates"]:
        latency = row["latency_ms"]
        rows.append(
            [
                f"{row['rate']:.0f}",
                row["target"],
                ms(latency.get("p50")),
                ms(latency.get("p95")),
                ms(latency.get("p99")),
                f"{row['error_rate']:.2%}",
                f"{row['generator_cpu']:.0%}",
            ]
        )
    lines += table(["RPS", "path", "p50", "p95", "p99", "errors", "generator CPU (one core)"], rows)
    lines += ["Added latency (path - direct at the same percentile and rate):", ""]
    lines += table(
        ["RPS", "gateway", "added p50", "added p95", "added p99", "sustained at this rate"],
        [
            [
                f"{r['rate']:.0f}",
                r["target"],
                ms(r["p50"]),
                ms(r["p95"]),
                ms(r["p99"]),
                "yes" if r["sustained"] else "no",
            ]
            for r in result["added_ms"]
        ],
    )
    lines += [
        "Highest sustained rate (< 1 % errors and p99 < 1 s), searched by doubling then bisecting:",
        "",
    ]
    lines += table(
        ["path", "sustained", "first rate that failed", "generator CPU at the top rate"],
        [
            [
                name,
                f"{data['sustained_rps']:.0f} RPS",
                "none up to the ceiling"
                if data["first_failed_rps"] is None
                else f"{data['first_failed_rps']:.0f} RPS",
                _top_cpu(data),
            ]
            for name, data in result["sustained"].items()
        ],
    )
    return lines


def _top_cpu(data: dict[str, Any]) -> str:
    steps = [step for step in data["steps"] if step["sustained"]]
    return f"{max(steps, key=lambda s: s['rate'])['generator_cpu']:.0%}" if steps else "n/a"


def local_section(result: dict[str, Any]) -> Lines:
    overhead = result["overhead_ms"]
    stages = ", ".join(f"{k} {v:.3f}" for k, v in result["server_stage_ms_p50"].items())
    return [
        f"`POST /v1/infer` sentiment on the in-process local tier vs the same onnxruntime "
        f"session called directly, interleaved, {result['rounds']} rounds over one kept-alive "
        "connection:",
        "",
        *table(
            ["", "p50", "p99"],
            [
                [
                    "onnxruntime direct",
                    ms(result["direct_ms"]["p50"]),
                    ms(result["direct_ms"]["p99"]),
                ],
                [
                    "through the gateway",
                    ms(result["gateway_ms"]["p50"]),
                    ms(result["gateway_ms"]["p99"]),
                ],
                [
                    "HTTP floor (GET /healthz)",
                    ms(result["http_floor_ms"]["p50"]),
                    ms(result["http_floor_ms"]["p99"]),
                ],
                ["overhead", ms(overhead["p50"]), ms(overhead["p99"])],
            ],
        ),
        f"Server-side stages at p50 (ms): {stages}. Target: {result['target']}: "
        f"{verdict(overhead['p50'] <= result.get('target_p50_ms', 1.0))}.",
        "",
    ]


def metrics_section(result: dict[str, Any]) -> Lines:
    share = result["record_share_of_gateway_overhead"]
    return [
        f"{result['what']}: {result['record_us_per_request']:.1f} µs per request recorded, "
        f"p50 difference {ms(result['difference_p50_ms'])}; one scrape "
        f"{ms(result['scrape_ms'])} ({result['scrape_bytes']} bytes). Target: {result['target']} "
        f"— {share:.1%}: {verdict(share <= 0.10)}.",
        "",
    ]


# --- 2. routing ---------------------------------------------------------------------------------
def routing_section(result: dict[str, Any]) -> Lines:
    rows = [
        [
            name,
            f"{m['apgr']:.3f}",
            f"{m['cpt50']:.1%}",
            f"{m['cpt80']:.1%}",
            f"{m['strong_share_at_95']:.1%}",
        ]
        for name, m in result["mean"].items()
    ]
    apgr = result["mean"]["learned"]["apgr"]
    return [
        f"RouteLLM's MMLU outcomes ({result['data']['rows']} prompts, "
        f"{result['data']['subjects']} subjects), {result['protocol']['outer_folds']} folds "
        "split by subject: every fold's test subjects are unseen in training. "
        "Mean over folds:",
        "",
        *table(["router", "APGR", "CPT(50 %)", "CPT(80 %)", "strong calls at 95 %"], rows),
        f"Target: APGR on held-out MMLU ≥ 0.65 — ours {apgr:.3f}: {verdict(apgr >= 0.65)}.",
        "",
    ]


def cascade_section(result: dict[str, Any]) -> Lines:
    lines: Lines = []
    for task in result["results"]:
        lines += [
            f"`{task['task']}`: {task['small']} → {task['large']}, {task['n_test']} held-out rows:",
            "",
        ]
        lines += table(
            ["policy", "cloud share", "accuracy"],
            [
                [r["policy"], f"{r['cloud_share']:.1%}", f"{r['accuracy']:.4f}"]
                for r in task["rows"]
            ],
        )
    return lines


# --- 3. serving ---------------------------------------------------------------------------------
def throughput_section(result: dict[str, Any]) -> Lines:
    best = result["best"]
    rows = [
        [
            r["max_batch_size"],
            r["concurrency"],
            f"{r['throughput_per_s']:.0f}",
            ms(r["latency_ms"]["p50"]),
            ms(r["latency_ms"]["p99"]),
            r["errors"],
        ]
        for r in result["runs"]
    ]
    bare = ", ".join(f"{k} {v:.0f}" for k, v in result["onnxruntime_alone"].items())
    met = verdict(best["throughput_per_s"] >= result["target_per_s"])
    return [
        f"{result['setup']}.",
        "",
        *table(["max batch", "callers", "inferences/s", "p50", "p99", "errors"], rows),
        f"onnxruntime alone (no HTTP): {bare}. Target ≥ {result['target_per_s']}/s: best "
        f"{best['throughput_per_s']:.0f}/s — {met}.",
        "",
    ]


def tier_section(result: dict[str, Any]) -> Lines:
    rows = []
    for tier, data in result["tiers"].items():
        client, execute = data["client_ms"], data["execute_ms"]
        rows.append([tier, ", ".join(data["answered_on"]), ms(client["p50"]), ms(client["p95"]),
                     ms(client["p99"]), ms(execute["p50"])])  # fmt: skip
    return [
        f"{result['what']}; {result['rounds']} requests each, alternating:",
        "",
        *table(["forced to", "answered on", "p50", "p95", "p99", "execute stage p50"], rows),
    ]


def llm_section(result: dict[str, Any]) -> Lines:
    rows = [
        [
            t["tier"],
            t["model"],
            ms(t["direct"]["ttft_ms"]),
            ms(t["gateway"]["ttft_ms"]),
            f"{t['direct']['tokens_per_s']:.1f}",
            f"{t['gateway']['tokens_per_s']:.1f}",
        ]
        for t in result["tiers"]
    ]
    return [
        f"llama.cpp servers ({result['threads_per_llm']} thread each), streamed chat, "
        f"{result['max_tokens']} tokens, median of {result['runs']} runs; direct vs through the "
        f"gateway with the model pinned. Streams cut and retried: {len(result['cut_streams'])}.",
        "",
        *table(
            ["tier", "model", "TTFT direct", "TTFT gateway", "tok/s direct", "tok/s gateway"], rows
        ),
    ]


# --- 4. failover --------------------------------------------------------------------------------
def failover_section(result: dict[str, Any]) -> Lines:
    rows = [
        [
            name,
            row["sent"],
            row["failed"],
            "-" if row["reroute_s"] is None else f"{row['reroute_s']:.2f} s",
            ms(row["p99_ms"]),
        ]
        for name, row in result["rows"].items()
    ]
    failed = sum(row["failed"] for row in result["rows"].values())
    return [
        *table(["scenario", "sent", "failed", "time to reroute", "p99"], rows),
        f"Target: zero failed requests on a cloud cut — {failed} failed: {verdict(failed == 0)}.",
        "",
    ]


SECTIONS: list[tuple[str, str, Callable[[dict[str, Any]], Lines], str]] = [
    ("gateway_overhead", "1. Gateway overhead vs LiteLLM", gateway_section, "latency vs load"),
    ("local_overhead", "1b. Local model path overhead", local_section, ""),
    ("metrics_cost", "1c. Cost of the request metrics", metrics_section, ""),
    ("routing", "2. Routing quality: MMLU deferral curves", routing_section, "deferral curves"),
    ("cascade", "2b. Confidence cascades", cascade_section, "cascade curves"),
    ("node_throughput", "3. Node throughput vs batch size", throughput_section, "throughput"),
    ("tier_latency", "3b. Local vs cloud latency", tier_section, "latency distributions"),
    ("llm", "3c. LLM time to first token and tokens/s", llm_section, "TTFT and tokens/s"),
    ("failover", "4. Failover on a cloud cut", failover_section, ""),
]


def header(latest: dict[str, Any]) -> Lines:
    machine = latest["machine"]
    versions = ", ".join(
        f"{name} {value or 'not installed'}" for name, value in machine["versions"].items()
    )
    return [
        "# Benchmarks",
        "",
        "Written by `make bench` (`bench/run_all.py`) from `bench/results/latest.json`; every "
        "figure here comes from that one run. Do not edit by hand: rerun `make bench`.",
        "",
        f"- Date: {machine['date']}; machine: {machine['cores']} cores, {machine['platform']}",
        f"- Versions: {versions}",
        f"- Run time: {latest['total_seconds'] / 60:.1f} min",
        "- The machine is shared with other work while it runs, so absolute figures are noisy; "
        "comparisons are made side by side in the same run (interleaved or back to back).",
        "",
    ]


def summary(latest: dict[str, Any]) -> Lines:
    rows: list[list[str]] = []
    gateway = _result(latest, "gateway_overhead")
    if gateway is not None:
        rows += [[t, m, verdict(ok)] for t, m, ok in gateway_targets(gateway)]
    routing = _result(latest, "routing")
    if routing is not None:
        apgr = routing["mean"]["learned"]["apgr"]
        rows.append(["APGR on held-out MMLU ≥ 0.65", f"{apgr:.3f}", verdict(apgr >= 0.65)])
    failover = _result(latest, "failover")
    if failover is not None:
        failed = sum(row["failed"] for row in failover["rows"].values())
        rows.append(
            ["zero failed requests on a cloud cut", f"{failed} failed", verdict(failed == 0)]
        )
    for section in latest["sections"].values():
        if section["status"] != "ok":
            rows.append([section["title"], f"not measured: {_why(section)}", "**missed**"])
    return ["## Targets", "", *table(["target", "measured", "verdict"], rows)]


def _result(latest: dict[str, Any], name: str) -> dict[str, Any] | None:
    section = latest["sections"].get(name)
    if section is None or section["status"] != "ok":
        return None
    result: dict[str, Any] = section["result"]
    return result


def _why(section: dict[str, Any]) -> str:
    result = section.get("result") or {}
    return str(result.get("reason") or section.get("error") or section["status"])


def render(latest: dict[str, Any], figures: dict[str, Path], document: Path) -> str:
    lines = header(latest) + summary(latest)
    for name, title, render_section, caption in SECTIONS:
        if name not in latest["sections"]:
            continue
        lines += [f"## {title}", ""]
        result = _result(latest, name)
        if result is None:
            lines += [f"Not measured in this run: {_why(latest['sections'][name])}.", ""]
            continue
        lines += render_section(result)
        lines += figure(figures, name, document, caption)
    return "\n".join(lines).rstrip() + "\n"


def write_report(latest: dict[str, Any], figures: dict[str, Path], document: Path) -> None:
    document.parent.mkdir(parents=True, exist_ok=True)
    document.write_text(render(latest, figures, document))
