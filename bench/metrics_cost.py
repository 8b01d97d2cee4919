"""What the Prometheus request metrics cost per request (issue 8: metrics ≤ 10 % of gateway
overhead).

In one process, interleaved so noise hits both alike, a local `sentiment` request through
``Pipeline.infer`` with the metrics observer attached and without it; plus the recording
alone (``RequestMetrics.record`` on a finished trace) timed over many calls, and one scrape
(``Metrics.exposition``). Writes bench/results/metrics_cost.json.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

from bench.harness import REPO, percentiles, write_result
from hybridinfer.controlplane import ControlPlane
from hybridinfer.metrics import Metrics
from hybridinfer.modelzoo import build_models
from hybridinfer.schemas import InferRequest
from hybridinfer.settings import Settings
from hybridinfer.trace import Trace

ROUNDS = 3000
RECORD_CALLS = 50_000
REQUEST = InferRequest.model_validate(
    {
        "task": "sentiment",
        "inputs": {"text": "the update broke my phone and support never answered"},
    }
)


async def measure(plane: ControlPlane) -> dict[str, object]:
    metrics = Metrics(plane)
    observers = plane.traces.observers
    samples: dict[bool, list[float]] = {True: [], False: []}
    last = Trace(request_id="warm")
    for index in range(ROUNDS + 300):
        for recording in (index % 2 == 0, index % 2 == 1):
            observers[:] = [metrics.requests.record] if recording else []
            trace = Trace(request_id=f"r{index}-{recording}", key_id="bench")
            started = time.perf_counter()
            await plane.pipeline.infer(REQUEST, trace)
            elapsed_ms = (time.perf_counter() - started) * 1000.0
            if index >= 300:  # warm-up
                samples[recording].append(elapsed_ms)
            last = trace
    started = time.perf_counter()
    for _ in range(RECORD_CALLS):
        metrics.requests.record(last)
    record_us = (time.perf_counter() - started) / RECORD_CALLS * 1e6
    started = time.perf_counter()
    text = metrics.exposition(0)
    scrape_ms = (time.perf_counter() - started) * 1000.0
    with_p, without_p = percentiles(samples[True]), percentiles(samples[False])
    overhead = json.loads((REPO / "bench" / "results" / "overhead.json").read_text())
    gateway_overhead_ms = overhead["overhead_ms"]["p50"]
    return {
        "what": "Pipeline.infer (local sentiment) with and without the request-metrics observer",
        "rounds": ROUNDS,
        "pipeline_with_metrics_ms": with_p,
        "pipeline_without_metrics_ms": without_p,
        "difference_p50_ms": round(with_p["p50"] - without_p["p50"], 4),
        "record_us_per_request": round(record_us, 3),
        "gateway_overhead_p50_ms": gateway_overhead_ms,
        "record_share_of_gateway_overhead": round(record_us / 1000.0 / gateway_overhead_ms, 4),
        "scrape_ms": round(scrape_ms, 3),
        "scrape_bytes": len(text),
        "target": "metrics <= 10 % of gateway overhead (p50, bench/results/overhead.json)",
    }


async def run(data_dir: Path) -> dict[str, object]:
    models_dir = REPO / ".hybridinfer" / "models"
    build_models(models_dir)
    settings = Settings(
        data_dir=data_dir,
        models_dir=models_dir,
        bootstrap_key=SecretStr("bench-admin-key-0123456789"),
        inference_threads=1,
    )
    plane = ControlPlane(settings)
    await plane.start()
    try:
        return await measure(plane)
    finally:
        await plane.stop()


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        result = asyncio.run(run(Path(data_dir)))
    path = write_result("metrics_cost", result)
    with_p = result["pipeline_with_metrics_ms"]
    without_p = result["pipeline_without_metrics_ms"]
    assert isinstance(with_p, dict)
    assert isinstance(without_p, dict)
    print(f"pipeline with metrics    p50 {with_p['p50']:.4f} ms  p99 {with_p['p99']:.4f} ms")
    print(f"pipeline without metrics p50 {without_p['p50']:.4f} ms  p99 {without_p['p99']:.4f} ms")
    print(f"recording alone          {result['record_us_per_request']} µs per request")
    print(
        f"share of gateway overhead (p50 {result['gateway_overhead_p50_ms']} ms): "
        f"{float(str(result['record_share_of_gateway_overhead'])) * 100:.2f} %"
    )
    print(f"one scrape               {result['scrape_ms']} ms, {result['scrape_bytes']} bytes")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
