"""Local vs cloud: the latency of one `sentiment` request on each tier, through the gateway.

A real ``hybridinfer up`` (LLMs off): the local tier runs `sentiment-small` in the gateway
process, the cloud node (a separate process on loopback) runs `sentiment-large`. Requests are
forced onto a tier with ``options.route`` and alternate local/cloud over one kept-alive
connection, so both see the same machine noise. Client-side latency, plus the server's own
``execute`` stage.

    python -m bench.tier_latency [--rounds 400]

Writes bench/results/tier_latency.json (with the samples, for the distribution plot).
"""

from __future__ import annotations

import argparse
import http.client
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import REPO, gateway_process, percentiles, write_result
from hybridinfer.modelzoo import build_models

KEY = "bench-admin-key-0123456789"
TEXT = "the update broke my phone and support never answered"
TIERS = ("local", "cloud")


def ask(connection: http.client.HTTPConnection, tier: str) -> tuple[float, dict[str, Any]]:
    body = json.dumps({"task": "sentiment", "inputs": {"text": TEXT}, "options": {"route": tier}})
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    started = time.perf_counter()
    connection.request("POST", "/v1/infer", body, headers)
    response = connection.getresponse()
    payload: dict[str, Any] = json.loads(response.read())
    elapsed_ms = (time.perf_counter() - started) * 1000
    if response.status != 200:
        raise RuntimeError(f"{tier}: HTTP {response.status}: {payload}")
    return elapsed_ms, payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    models_dir = REPO / ".hybridinfer" / "models"
    build_models(models_dir)
    samples: dict[str, list[float]] = {tier: [] for tier in TIERS}
    execute: dict[str, list[float]] = {tier: [] for tier in TIERS}
    placed: dict[str, set[str]] = {tier: set() for tier in TIERS}
    with (
        tempfile.TemporaryDirectory() as data_dir,
        gateway_process(Path(data_dir), KEY, models_dir, {"HYBRIDINFER_LLM": "off"}) as port,
    ):
        connection = http.client.HTTPConnection("127.0.0.1", port)
        deadline = time.monotonic() + 30  # the cloud node registers a moment after `up` is ready
        while True:
            try:
                ask(connection, "cloud")
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for index in range(args.rounds + 50):
            for tier in TIERS:
                elapsed_ms, payload = ask(connection, tier)
                if index < 50:  # warm-up
                    continue
                samples[tier].append(round(elapsed_ms, 4))
                execute[tier].append(payload["timings_ms"]["execute"])
                placed[tier].update(str(sub["tier"]) for sub in payload["subtasks"])
    result = {
        "what": "sentiment through the gateway, forced to the local tier or the cloud node",
        "rounds": args.rounds,
        "tiers": {
            tier: {
                "client_ms": percentiles(samples[tier]),
                "execute_ms": percentiles(execute[tier]),
                "answered_on": sorted(placed[tier]),
                "samples_ms": samples[tier],
            }
            for tier in TIERS
        },
    }
    path = write_result("tier_latency", result)
    for tier in TIERS:
        client = result["tiers"][tier]["client_ms"]
        print(f"{tier:6} p50 {client['p50']:.3f} ms  p99 {client['p99']:.3f} ms")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
