"""What stalls the gateway's event loop under steady load, and how stable the tail is run to run.

The gateway of ``bench/profile_gateway.py`` (a static `openai` node on the fixed-answer
upstream, model pinned, key checked, traces and metrics on) runs with its event-loop lag probe
on (``HYBRIDINFER_LOOP_LAG_INTERVAL_MS``, ``observe/looplag.py``). Five open-loop runs of the
pinned chat at a fixed rate (``bench/loadgen.py``, 20 s each after 1 s of warm-up) report the
client's p50/p99, and, from the gateway's own histograms, how often the loop ran a timer
late by more than 5 / 20 / 50 ms and how long its garbage collections took, by generation.
A stall at or over the probe's ``loop_stall_ms`` is logged by the gateway; their count per
run is reported too.

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
from bench.profile_gateway import PATHS, _load_path, gateway

LAG_BUCKETS = ("0.005", "0.02", "0.05")


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
    runs = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        upstream = stack.enter_context(upstream_process(free_port()))
        url, _pid = stack.enter_context(gateway(Path(tmp), upstream))
        target = Target(path.name, url, [f"Authorization: Bearer {KEY}"])
        time.sleep(3.0)
        log = Path(tmp) / "gateway.log"
        for index in range(args.runs):
            before, stalls_before = histograms(url), log.read_text().count("stalled")
            result = _load_path(target, path, args.rate, args.duration)
            figures = delta(histograms(url), before)
            figures["stalls_logged"] = log.read_text().count("stalled") - stalls_before
            run = {"run": index + 1, "latency_ms": result["latency_ms"],
                   "error_rate": result["error_rate"], **figures}  # fmt: skip
            runs.append(run)
            print(
                f"run {index + 1}: p50 {result['latency_ms'].get('p50')} ms, "
                f"p99 {result['latency_ms'].get('p99')} ms, errors {result['error_rate']:.2%}, "
                f"late probes {figures['late_probes']}, collections {figures['collections']}",
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
            "runs": runs,
        },
    )
    print(f"wrote {written}")


if __name__ == "__main__":
    main()
