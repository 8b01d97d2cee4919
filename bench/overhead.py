"""Gateway overhead for a local `sentiment` request (2-core machine; numbers are per run).

Side by side in one run, interleaved so machine noise hits both alike:
  direct  — onnxruntime called in this process on the same model file and text;
  gateway — POST /v1/infer to a real `hybridinfer up` process over a kept-alive connection;
  floor   — GET /healthz on the same server (what any HTTP round trip costs here).
Overhead = gateway - direct, at p50 and p99. Writes bench/results/overhead.json.
"""

from __future__ import annotations

import http.client
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from bench.harness import REPO, gateway_process, percentiles, write_result
from hybridinfer.models.catalog import find_model
from hybridinfer.modelzoo import build_models

KEY = "bench-admin-key-0123456789"
TEXT = "the update broke my phone and support never answered"
ROUNDS = 2000


def direct_runner(models_dir: Path) -> tuple[ort.InferenceSession, dict[str, np.ndarray]]:
    path, card = find_model(models_dir, "sentiment-small")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        str(path), sess_options=options, providers=["CPUExecutionProvider"]
    )
    shape = [1 if d == -1 else d for d in card["inputs"][0]["shape"]]
    feeds = {card["inputs"][0]["name"]: np.array([TEXT], dtype=object).reshape(shape)}
    return session, feeds


def main() -> None:
    models_dir = REPO / ".hybridinfer" / "models"
    build_models(models_dir)
    session, feeds = direct_runner(models_dir)
    # The local path, pinned: on a 2-core host this loop alone can saturate the CPU, and the
    # default policy would then send the work to the cloud node (another path, another figure).
    request = {"task": "sentiment", "inputs": {"text": TEXT}, "options": {"route": "local"}}
    body = json.dumps(request).encode()
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    direct: list[float] = []
    gateway: list[float] = []
    floor: list[float] = []
    server_stages: dict[str, list[float]] = {}
    with (
        tempfile.TemporaryDirectory() as data_dir,
        gateway_process(Path(data_dir), KEY, models_dir) as port,
    ):
        connection = http.client.HTTPConnection("127.0.0.1", port)
        for index in range(ROUNDS + 200):
            started = time.perf_counter()
            session.run(None, feeds)
            direct_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            connection.request("POST", "/v1/infer", body, headers)
            response = connection.getresponse()
            payload = json.loads(response.read())
            gateway_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            floor_ms = (time.perf_counter() - started) * 1000
            if response.status != 200:
                raise RuntimeError(f"gateway answered {response.status}: {payload}")
            if index < 200:  # warm-up
                continue
            direct.append(direct_ms)
            gateway.append(gateway_ms)
            floor.append(floor_ms)
            for stage, value in payload["timings_ms"].items():
                server_stages.setdefault(stage, []).append(value)
    direct_p, gateway_p, floor_p = percentiles(direct), percentiles(gateway), percentiles(floor)
    result = {
        "what": "local sentiment: through the gateway vs onnxruntime called directly",
        "rounds": ROUNDS,
        "direct_ms": direct_p,
        "gateway_ms": gateway_p,
        "http_floor_ms": floor_p,
        "overhead_ms": {
            "p50": round(gateway_p["p50"] - direct_p["p50"], 4),
            "p99": round(gateway_p["p99"] - direct_p["p99"], 4),
        },
        "server_stage_ms_p50": {k: round(float(np.median(v)), 4) for k, v in server_stages.items()},
        "target": "overhead p50 <= 1 ms",
        "target_p50_ms": 1.0,
    }
    path = write_result("overhead", result)
    print(f"direct onnxruntime   p50 {direct_p['p50']:.3f} ms  p99 {direct_p['p99']:.3f} ms")
    print(f"through the gateway  p50 {gateway_p['p50']:.3f} ms  p99 {gateway_p['p99']:.3f} ms")
    print(f"HTTP floor (healthz) p50 {floor_p['p50']:.3f} ms  p99 {floor_p['p99']:.3f} ms")
    overhead = result["overhead_ms"]
    print(f"overhead             p50 {overhead['p50']:.3f} ms  p99 {overhead['p99']:.3f} ms")
    print(f"server-side stages (p50): {result['server_stage_ms_p50']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
