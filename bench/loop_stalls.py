"""What stalls the gateway's event loop under steady load, and how stable the tail is run to run.

The gateway of ``bench/profile_gateway.py`` (a static `openai` node on the fixed-answer
upstream, model pinned, key checked, traces and metrics on) runs with its event-loop lag probe
on (``HYBRIDINFER_LOOP_LAG_INTERVAL_MS``, ``observe/looplag.py``). Five open-loop runs of the
pinned chat at a fixed rate (``bench/loadgen.py``, 20 s each after 1 s of warm-up) report the
client's p50/p99, and, from the gateway's own histograms, how often the loop ran a timer
late by more than 5 / 20 / 50 ms and how long its garbage collections took, by generation.
A stall at or over the probe's ``loop_stall_ms`` is logged by the gateway; their count per
run is reported too. A second gateway with the youngest generation collected at Python's own
threshold (``gc_young_threshold`` 700) runs beside it, the two alternating run by run, so the
collector setting's effect is read in one run.

    python -m bench.loop_stalls [--rate 300] [--runs 5] [--duration 20] [--label before]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.gateway_overhead import KEY, Target
from bench.harness import free_port, write_result
from bench.processes import upstream_process
from bench.profile_gateway import PATHS, RequestPath, _load_path, gateway

LAG_BUCKETS = ("0.005", "0.02", "0.05")
GATEWAYS = {"served": {}, "python-gc-threshold": {"HYBRIDINFER_GC_YOUNG_THRESHOLD": "700"}}
"""The gateway as configured by default, and the same with Python's own young threshold."""


def histograms(url: str) -> dict[str, dict[str, float]]:
    """Cumulative bucket counts and sums of the lag and collection histograms, by series."""
    request = urllib.request.Request(f"{url}/metrics", headers={"Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read().decode()
    series: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        if not line.startswith(("hybridinfer_event_loop_lag_seconds", "hybridinfer_gc_pause")):
            continue
        name, _, value = line.rpartition(" ")
        base, _, labels = name.partition("{")
        generation = next(
            (
                p.split("=")[1].strip('"')
                for p in labels.rstrip("}").split(",")
                if "generation" in p
            ),
            "",
        )
        key = base.rsplit("_", 1)[0] + (f"[{generation}]" if generation else "")
        suffix = base.rsplit("_", 1)[1]
        le = next((p.split("=")[1].strip('"}') for p in labels.split(",") if "le=" in p), "")
        series.setdefault(key, {})[f"le{le}" if suffix == "bucket" else suffix] = float(value)
    return series


def delta(
    after: dict[str, dict[str, float]], before: dict[str, dict[str, float]]
) -> dict[str, Any]:
    """Per-run figures: late probes over each threshold, collections and their time."""
    lag_after = after.get("hybridinfer_event_loop_lag_seconds", {})
    lag_before = before.get("hybridinfer_event_loop_lag_seconds", {})
    probes = lag_after.get("count", 0) - lag_before.get("count", 0)
    late = {
        f"over_{float(bound) * 1000:.0f}ms": int(
            probes - (lag_after.get(f"le{bound}", 0) - lag_before.get(f"le{bound}", 0))
        )
        for bound in LAG_BUCKETS
    }
    collections: dict[str, Any] = {}
    for key, values in after.items():
        if not key.startswith("hybridinfer_gc_pause"):
            continue
        old = before.get(key, {})
        count = values.get("count", 0) - old.get("count", 0)
        spent = values.get("sum", 0) - old.get("sum", 0)
        collections[key.split("[")[1].rstrip("]")] = {
            "count": int(count),
            "total_ms": round(spent * 1000, 1),
            "over_20ms": int(count - (values.get("le0.02", 0) - old.get("le0.02", 0))),
        }
    return {"lag_probes": int(probes), "late_probes": late, "collections": collections}


def one_run(
    target: Target, log: Path, path: RequestPath, rate: float, duration_s: float
) -> dict[str, Any]:
    """One open-loop run: the client's figures and what the gateway's histograms and log saw."""
    before, stalls_before = histograms(target.url), log.read_text().count("stalled")
    result = _load_path(target, path, rate, duration_s)
    figures = delta(histograms(target.url), before)
    figures["stalls_logged"] = log.read_text().count("stalled") - stalls_before
    return {"latency_ms": result["latency_ms"], "error_rate": result["error_rate"], **figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--probe-ms", type=float, default=10.0, help="Lag probe period.")
    parser.add_argument("--label", default="", help="Suffix of the results file.")
    args = parser.parse_args()
    os.environ["HYBRIDINFER_LOOP_LAG_INTERVAL_MS"] = str(args.probe_ms)
    os.environ["HYBRIDINFER_LOOP_STALL_MS"] = "20"
    path = PATHS[0]  # the pinned chat
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in GATEWAYS}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        upstream = stack.enter_context(upstream_process(free_port()))
        served = {}
        for name, env in GATEWAYS.items():
            work = Path(tmp) / name
            work.mkdir()
            url, _pid = stack.enter_context(gateway(work, upstream, env))
            served[name] = (url, work / "gateway.log")
        time.sleep(3.0)
        for index in range(args.runs):
            for name, (url, log) in served.items():
                target = Target(path.name, url, [f"Authorization: Bearer {KEY}"])
                run = one_run(target, log, path, args.rate, args.duration)
                runs[name].append({"run": index + 1, **run})
                print(
                    f"{name} run {index + 1}: p50 {run['latency_ms'].get('p50')} ms, "
                    f"p99 {run['latency_ms'].get('p99')} ms, errors {run['error_rate']:.2%}, "
                    f"late probes {run['late_probes']}, collections {run['collections']}",
                    flush=True,
                )
    name = "loop_stalls" + (f"_{args.label}" if args.label else "")
    written = write_result(
        name,
        {
            "what": f"{args.runs} open-loop runs of {args.duration:.0f} s at {args.rate:.0f} RPS "
            "(pinned chat) with the loop lag probe on",
            "load_average": os.getloadavg(),
            "rate": args.rate,
            "probe_ms": args.probe_ms,
            "gateways": dict(GATEWAYS),
            "runs": runs["served"],
            "runs_by_gateway": runs,
        },
    )
    print(f"wrote {written}")


if __name__ == "__main__":
    main()
