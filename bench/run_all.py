"""``make bench``: every benchmark in one run, then the plots and ``docs/benchmarks.md``.

Each section is its own process (a crash or a hang in one does not take the others down; a
section that fails is reported as failed, never filled from an older run): it writes its JSON
into ``bench/results/``, which is read back only if it was written during this run. The whole
is gathered into ``bench/results/latest.json``; ``bench/plots.py`` draws the figures and
``bench/report.py`` writes the document from that file alone.

    python -m bench.run_all [--only gateway_overhead,routing] [--skip llm] [--report-only]

``--only`` reruns those sections and replaces them in the last run's record; the others keep
their results and the date they ran, which the document states per section.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from bench.harness import REPO, RESULTS, machine
from bench.litellm_proxy import installed_version
from bench.plots import draw_all
from bench.report import DOCUMENT, write_report

LATEST = RESULTS / "latest.json"


@dataclass(frozen=True, slots=True)
class Section:
    """One benchmark: its command (run from the repository), its result file, a time limit."""

    name: str
    title: str
    command: tuple[str, ...]
    result: str
    timeout_s: float


SECTIONS = (
    Section(
        "gateway_overhead",
        "Gateway overhead vs LiteLLM (open-loop load)",
        ("-m", "bench.gateway_overhead", "--workers", "2"),  # one process and two, side by side
        "gateway_overhead.json",
        2400,  # the sustained holds: 30 s each, up to five per path
    ),
    Section(
        "profile_gateway",
        "Where the gateway's CPU goes (py-spy)",
        ("-m", "bench.profile_gateway"),
        "profile_gateway.json",
        480,  # 60 s idle, then three loaded paths
    ),
    Section(
        "loop_stalls",
        "Event-loop stalls and the tail at 300 RPS",
        ("-m", "bench.loop_stalls"),
        "loop_stalls.json",
        300,
    ),
    Section(
        "local_overhead",
        "Local sentiment path vs onnxruntime direct",
        ("-m", "bench.overhead"),
        "overhead.json",
        180,
    ),
    Section(
        "metrics_cost",
        "Cost of the request metrics",
        ("-m", "bench.metrics_cost"),
        "metrics_cost.json",
        480,
    ),
    Section(
        "decision",
        "Routing decision time, snapshot off and on",
        ("-m", "bench.decision"),
        "decision.json",
        180,
    ),
    Section(
        "shed_cost",
        "CPU of a refusal vs an answer",
        ("-m", "bench.shed_cost"),
        "shed_cost.json",
        300,
    ),
    Section(
        "frontdoor",
        "CPU of the front door: each concern, the old chain, the one callable",
        ("-m", "bench.frontdoor"),
        "frontdoor.json",
        300,
    ),
    Section(
        "pathwork",
        "Python instructions per request, by layer",
        ("-m", "bench.pathwork"),
        "pathwork.json",
        180,
    ),
    Section(
        "upstream_client",
        "The upstream call: aiohttp against the request path's client",
        ("-m", "bench.upstream_client"),
        "upstream_client.json",
        300,
    ),
    Section(
        "servers",
        "uvicorn against Granian",
        ("-m", "bench.servers"),
        "servers.json",
        900,  # 2 apps x 2 servers x 2 rates x 3 rounds of ~20 s
    ),
    # Embedding every prompt the first time on a machine takes ~11 min; cached afterwards. The
    # local LLM's rows use what `python -m bench.routingllm` has measured (its pass over the
    # sample takes ~20 min more): none on a machine where it has not run.
    Section(
        "routing",
        "MMLU deferral curves",
        ("-m", "bench.routing", "--llm-cached-only"),
        "routing.json",
        2400,
    ),
    Section(
        "cascade", "Sentiment and digits cascades", ("-m", "bench.cascade"), "cascade.json", 180
    ),
    Section(
        "node_throughput",
        "Node throughput vs batch size",
        (
            "-m",
            "bench.node_throughput",
            "--seconds",
            "4",
            "--batches",
            "1,8,32",
            "--concurrency",
            "1,32",
        ),
        "node_throughput.json",
        240,
    ),
    Section(
        "tier_latency",
        "Local vs cloud latency",
        ("-m", "bench.tier_latency"),
        "tier_latency.json",
        180,
    ),
    Section(
        "llm",
        "LLM TTFT and tokens/s per tier",
        ("-m", "bench.llm", "--runs", "3", "--max-tokens", "48"),
        "llm.json",
        300,
    ),
    Section(
        "failover",
        "Failover on a cloud cut",
        ("-m", "bench.failover"),
        "failover.json",
        300,
    ),
)


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """What the document names: hybridinfer, Python, onnxruntime, LiteLLM, llama.cpp."""
    return {
        "hybridinfer": package_version("hybridinfer"),
        "python": sys.version.split()[0],
        "onnxruntime": package_version("onnxruntime"),
        "litellm": installed_version(),
        "llama-cpp-python": package_version("llama_cpp_python"),
        "git_commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        or None,
    }


def run_section(section: Section) -> dict[str, Any]:
    """Run one section's process; its result if it wrote one during this run."""
    path = RESULTS / section.result
    started_wall = time.time()
    started = time.perf_counter()
    print(f"\n=== {section.title} ({section.name}) ===", flush=True)
    load_before = os.getloadavg()[0]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        finished = subprocess.run(
            [sys.executable, *section.command], cwd=REPO, env=env, timeout=section.timeout_s
        )
        code: int | str = finished.returncode
    except subprocess.TimeoutExpired:
        code = f"timed out after {section.timeout_s:.0f} s"
    seconds = round(time.perf_counter() - started, 1)
    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    fresh = path.exists() and path.stat().st_mtime >= started_wall
    if code != 0 or not fresh:
        reason = f"exit {code}" if code != 0 else f"{section.result} was not written"
        print(f"--- {section.name}: FAILED ({reason}) after {seconds} s", flush=True)
        return {"status": "failed", "error": reason, "seconds": seconds, "load_average": load}
    result = json.loads(path.read_text())
    status = result.get("status", "ok")
    print(f"--- {section.name}: {status} in {seconds} s", flush=True)
    return {"status": status, "seconds": seconds, "load_average": load, "result": result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="Comma-separated section names.")
    parser.add_argument("--skip", default="", help="Comma-separated section names.")
    parser.add_argument(
        "--report-only", action="store_true", help="Redraw the plots and the document only."
    )
    args = parser.parse_args()
    if args.report_only:
        publish(json.loads(LATEST.read_text()))
        return
    only = {name for name in args.only.split(",") if name}
    skip = {name for name in args.skip.split(",") if name}
    started = time.perf_counter()
    sections: dict[str, Any] = {}
    commit = versions()["git_commit"]
    for section in SECTIONS:
        if (only and section.name not in only) or section.name in skip:
            continue
        ran = {
            "title": section.title,
            "date": machine()["date"],
            "commit": commit,
            **run_section(section),
        }
        sections[section.name] = ran
    latest = {
        "machine": {**machine(), "versions": versions()},
        "total_seconds": round(time.perf_counter() - started, 1),
        "sections": sections,
    }
    if only and LATEST.exists():
        latest = merged(latest, json.loads(LATEST.read_text()))
    LATEST.write_text(json.dumps(latest, indent=2) + "\n")
    publish(latest)
    print(f"total {latest['total_seconds']} s", flush=True)


def merged(latest: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
    """``latest``'s sections put into the ``earlier`` run's record: a rerun of some sections
    replaces just those; the others keep their results and the date they ran."""
    ran_then = {
        "date": earlier["machine"]["date"],
        "commit": earlier["machine"].get("versions", {}).get("git_commit"),
    }
    kept = {
        # A record with a date of its own was kept from a run before that one: its commit, if
        # it has none, is unknown, not the earlier run's.
        name: record if "date" in record else {**ran_then, **record}
        for name, record in earlier["sections"].items()
        if name not in latest["sections"]
    }
    sections = {
        name: kept.get(name) or latest["sections"].get(name) for name in earlier["sections"]
    }
    sections.update(latest["sections"])
    return {**latest, "sections": sections, "total_seconds": earlier.get("total_seconds", 0.0)}


def publish(latest: dict[str, Any]) -> None:
    """The figures and ``docs/benchmarks.md`` from one run's results."""
    figures = draw_all(latest, RESULTS)
    write_report(latest, figures, DOCUMENT)
    print(f"\nwrote {LATEST}, {len(figures)} figures and {DOCUMENT}")


if __name__ == "__main__":
    main()
