"""``docs/benchmarks.md`` from ``bench/results/latest.json``: every figure from one run.

Each target is stated next to its figure with a plain "met" or "missed"; a section that did
not run or failed says so instead of showing an older number. Section 1 (gateway overhead)
is written by ``bench/report_gateway.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import REPO
from bench.markdown import Lines, ms, table, verdict
from bench.report_gateway import (
    gateway_section,
    gateway_targets,
    local_section,
    metrics_section,
    profile_section,
    stalls_section,
    unloaded_targets,
)
from bench.report_hotpath import (
    decision_section,
    frontdoor_section,
    pathwork_section,
    servers_section,
    shed_section,
    upstream_client_section,
)

DOCUMENT = REPO / "docs" / "benchmarks.md"


def figure(figures: dict[str, Path], name: str, document: Path, caption: str) -> Lines:
    path = figures.get(name)
    if path is None:
        return []
    return [f"![{caption}]({os.path.relpath(path, document.parent)})", ""]


# --- 2. routing ---------------------------------------------------------------------------------
def shipped_recipe(result: dict[str, Any]) -> str:
    """The label of the recipe the live router loads (the one whose cost was measured)."""
    return str(result["cost"]["router"])


def _spread(figure: dict[str, float], share: bool = False) -> str:
    shown = "{:.1%}" if share else "{:.3f}"
    return (
        f"{shown.format(figure['mean'])} ± {shown.format(figure['std'])} "
        f"({shown.format(figure['worst'])})"
    )


def routing_targets(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """Issue 19's goals, for the shipped recipe: held-out-subject APGR, strong calls at 95 %
    of the strong model's quality, and staying above length under a category shift and, where
    measured, under a change of format (the answer choices removed)."""
    shipped = shipped_recipe(result)
    subjects = result["protocols"]["subjects"]["summary"]
    categories = result["protocols"]["categories"]["summary"]
    apgr = subjects[shipped]["apgr"]["mean"]
    share = subjects[shipped]["strong_share_at_95"]["mean"]
    shifted, length = categories[shipped]["apgr"]["mean"], categories["length"]["apgr"]["mean"]
    return [
        ("APGR on held-out MMLU subjects ≥ 0.65 (shipped router)", f"{apgr:.3f}", apgr >= 0.65),
        ("strong calls at 95 % of strong quality ≤ 45 % (shipped)", f"{share:.1%}", share <= 0.45),
        (
            "above length with a whole MMLU category held out (shipped)",
            f"{shifted:.3f} vs {length:.3f}",
            shifted > length,
        ),
        *_format_target(result, shipped),
        *_domain_targets(result, shipped),
    ]


def domain_protocols(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The other benchmarks the run scored (``--domain``), by file stem."""
    return {
        name.removeprefix("domain:"): protocol
        for name, protocol in result["protocols"].items()
        if name.startswith("domain:")
    }


def _domain_targets(result: dict[str, Any], shipped: str) -> list[tuple[str, str, bool]]:
    found = []
    for name, protocol in domain_protocols(result).items():
        paired = protocol["vs_length"][shipped]
        low, high = paired["ci95"]
        learned = protocol["summary"][shipped]["apgr"]["mean"]
        length = protocol["summary"]["length"]["apgr"]["mean"]
        seen = protocol.get("seen_in_training", 0)
        found.append(
            (
                f"clearly above length on another benchmark, `{name}` (shipped; the 95 % "
                "paired bootstrap interval of the difference above zero)",
                f"{learned:.3f} vs {length:.3f}, difference {paired['apgr_difference']:+.3f} "
                f"({low:+.3f}…{high:+.3f})"
                + (f"; {seen} of its prompts were trained on: not judged" if seen else ""),
                paired["verdict"] == "above" and not seen,
            )
        )
    return found


def _domain_tables(result: dict[str, Any], shipped: str) -> Lines:
    lines: Lines = []
    for protocol in domain_protocols(result).values():
        rows = []
        for router, figures in protocol["summary"].items():
            paired = protocol["vs_length"].get(router)
            rows.append(
                [
                    f"**{router}** (shipped)" if router == shipped else router,
                    f"{figures['apgr']['mean']:.3f}",
                    (
                        f"{paired['apgr_difference']:+.3f} ({paired['ci95'][0]:+.3f}…"
                        f"{paired['ci95'][1]:+.3f}), {paired['verdict']}"
                        if paired
                        else "—"
                    ),
                    f"{figures['strong_share_at_95']['mean']:.1%}",
                ]
            )
        lines += [
            f"Another benchmark, `{protocol['file']}`: {protocol['rows']} prompts "
            f"({protocol['contaminated_dropped']} dropped as contaminated"
            + (
                f"; {protocol['seen_in_training']} are MMLU prompts, scored in-sample"
                if protocol.get("seen_in_training")
                else ""
            )
            + "), weak quality "
            f"{protocol['weak_quality']:.3f}, strong {protocol['strong_quality']:.3f}; every "
            "router fitted on all of MMLU, scored once on it (`chosen` picked "
            f"`{protocol['folds'][0]['chosen_recipe']}`):",
            "",
            *table(["router", "APGR", "less length (95 % interval)", "strong calls at 95 %"], rows),
        ]
    return lines


CLEAR_MARGIN = 0.02
"""APGR over length that counts as clearly above it: about half the spread of length's own
figure over the subject folds (0.04), so a tie is not read as a win."""


def _format_target(result: dict[str, Any], shipped: str) -> list[tuple[str, str, bool]]:
    if "formats" not in result["protocols"]:
        return []
    formats = result["protocols"]["formats"]["summary"]
    shifted, length = formats[shipped]["apgr"]["mean"], formats["length"]["apgr"]["mean"]
    return [
        (
            f"clearly above length (by ≥ {CLEAR_MARGIN}) with the answer choices removed (shipped)",
            f"{shifted:.3f} vs {length:.3f}",
            round(shifted - length, 4) >= CLEAR_MARGIN,
        )
    ]


def routing_section(result: dict[str, Any]) -> Lines:
    shipped = shipped_recipe(result)
    subjects = result["protocols"]["subjects"]["summary"]
    categories = result["protocols"]["categories"]["summary"]
    formats = result["protocols"].get("formats", {}).get("summary", {})
    rows = [
        [
            f"**{name}** (shipped)" if name == shipped else name,
            _spread(figures["apgr"]),
            _spread(categories[name]["apgr"]) if name in categories else "n/a",
            _spread(formats[name]["apgr"]) if name in formats else "n/a",
            f"{figures['cpt50']['mean']:.1%}",
            _spread(figures["strong_share_at_95"], share=True),
            f"{figures['within_r']['mean']:+.3f}" if "within_r" in figures else "n/a",
        ]
        for name, figures in subjects.items()
    ]
    checks = routing_targets(result)
    llm = result.get("llm_signal")
    sample = (
        [
            f"Rows named `sample/` are fitted and scored on a fixed random sample of "
            f"{llm['sample_rows']} prompts (the local LLM's pass over every prompt, "
            f"p50 {llm['cost']['all']['p50_ms']:.0f} ms each here, is too slow for all 14,037), "
            "on the same folds: compare them with each other, not with the full-data rows.",
            "",
        ]
        if llm and "skipped" not in llm
        else [f"The local LLM's rows were not measured in this run: {llm['skipped']}", ""]
        if llm
        else []
    )
    return [
        f"RouteLLM's MMLU outcomes ({result['data']['rows']} prompts, "
        f"{result['data']['subjects']} subjects). Every router on the same folds: "
        f"{result['protocol']['subjects']}; {result['protocol']['categories']}; and "
        f"{result['protocol'].get('formats', 'no format shift (not measured in this run)')}; "
        f"`chosen` is the selection procedure itself ({result['protocol']['selection']}). "
        "The oracle knows the outcomes (the ceiling); `subject-oracle` knows each held-out "
        "subject's mean gain of the strong model and nothing inside a subject (the ceiling of a "
        "router whose only signal is which subjects are hard). Figures are the mean ± spread "
        "over folds "
        f"(worst fold); features took {result.get('feature_seconds', 0):.0f} s (cached in "
        "`.hybridinfer/cache`). `docs/routing.md` explains each candidate.",
        "",
        *table(
            [
                "router",
                "APGR, subjects held out",
                "APGR, a category held out",
                "APGR, choices removed",
                "CPT(50 %)",
                "strong calls at 95 %",
                "order within a subject (rho)",
            ],
            rows,
        ),
        "Order within a subject: the Spearman correlation between a router's score and the "
        "strong model's gain (strong right - weak right) inside each held-out subject, "
        "weighted by the subjects' sizes (mean over the subject folds). APGR over several "
        "subjects also rewards telling the subjects apart; a file of one domain has only this.",
        "",
        *sample,
        *_domain_tables(result, shipped),
        *[f"Target: {name} — {measured}: {verdict(ok)}." for name, measured, ok in checks],
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
            _where(r),
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
        *table(["max batch", "callers", "lone call", "inferences/s", "p50", "p99", "errors"], rows),
        f"onnxruntime alone (no HTTP): {bare}. Target ≥ {result['target_per_s']}/s: best "
        f"{best['throughput_per_s']:.0f}/s — {met}.",
        "",
    ]


def _where(run: dict[str, Any]) -> str:
    """Where a lone quick call ran (runs written before both were measured: on a thread)."""
    return "on the loop" if run.get("inline", False) else "on a thread"


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
    ("profile_gateway", "1a. Where the gateway's CPU goes", profile_section, ""),
    ("local_overhead", "1b. Local model path overhead", local_section, ""),
    ("metrics_cost", "1c. Cost of the request metrics", metrics_section, ""),
    ("decision", "1d. Routing decision time per subtask", decision_section, ""),
    ("shed_cost", "1e. What a refusal costs", shed_section, ""),
    ("frontdoor", "1f. The front door: one callable for the middleware", frontdoor_section, ""),
    ("servers", "1g. uvicorn against Granian", servers_section, ""),
    ("loop_stalls", "1h. Event-loop stalls at a steady rate", stalls_section, ""),
    ("pathwork", "1i. The Python work of a request, counted", pathwork_section, ""),
    ("upstream_client", "1j. The upstream call: two HTTP clients", upstream_client_section, ""),
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
        "figure of a section comes from one run of it, side by side where it compares (a "
        "section rerun alone with `--only` says its own date). Do not edit by hand: rerun "
        "`make bench`.",
        "",
        f"- Newest run: {machine['date']}; machine: {machine['cores']} cores, "
        f"{machine['platform']}",
        f"- Versions of the newest run: {versions}. A section kept from an earlier run (its "
        "date differs) ran on that run's code and machine; it names its commit where it was "
        "recorded.",
        "- Run time: "
        f"{sum(r.get('seconds') or 0 for r in latest['sections'].values()) / 60:.1f} min, the "
        "sections' own times summed (each section says when it ran)",
        "- The machine is shared with other work while it runs, so absolute figures are noisy; "
        "comparisons are made side by side in the same run (interleaved or back to back).",
        "",
    ]


def summary(latest: dict[str, Any]) -> Lines:
    rows: list[list[str]] = []
    gateway = _result(latest, "gateway_overhead")
    if gateway is not None:
        rows += [[t, m, verdict(ok)] for t, m, ok in gateway_targets(gateway)]
    unloaded = _result(latest, "local_overhead")
    if unloaded is not None:
        rows += [[t, m, verdict(ok)] for t, m, ok in unloaded_targets(unloaded)]
    routing = _result(latest, "routing")
    if routing is not None:
        try:
            rows += [[t, m, verdict(ok)] for t, m, ok in routing_targets(routing)]
        except (KeyError, TypeError) as error:  # a result written by an older bench
            rows.append(["routing targets", f"not rendered: {error!r}", "n/a"])
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


def context(section: dict[str, Any], cores: int) -> Lines:
    """How long the section ran, when, and how busy the machine was (1-minute load average)."""
    load = section.get("load_average")
    commit = f" at {section['commit']}" if section.get("commit") else ""
    when = f"run {section['date']}{commit}; " if "date" in section else ""
    if load is None:
        return [f"_{when}{section['seconds']:.0f} s, on {cores} cores._", ""] if when else []
    return [
        f"_{when}{section['seconds']:.0f} s; load average {load['before']:.1f} before, "
        f"{load['after']:.1f} after, on {cores} cores._",
        "",
    ]


def render(latest: dict[str, Any], figures: dict[str, Path], document: Path) -> str:
    lines = header(latest) + summary(latest)
    for name, title, render_section, caption in SECTIONS:
        if name not in latest["sections"]:
            continue
        lines += [f"## {title}", "", *context(latest["sections"][name], latest["machine"]["cores"])]
        result = _result(latest, name)
        if result is None:
            lines += [f"Not measured in this run: {_why(latest['sections'][name])}.", ""]
            continue
        try:
            lines += render_section(result)
        except (KeyError, TypeError, ValueError, IndexError) as error:  # a changed result file
            lines += [
                f"Could not render this section's result: {type(error).__name__}: {error}.",
                "",
            ]
            continue
        lines += figure(figures, name, document, caption)
    return "\n".join(lines).rstrip() + "\n"


def write_report(latest: dict[str, Any], figures: dict[str, Path], document: Path) -> None:
    document.parent.mkdir(parents=True, exist_ok=True)
    document.write_text(render(latest, figures, document))
