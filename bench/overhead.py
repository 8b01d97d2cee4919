"""What the gateway adds to one request at a time (2-core machine; numbers are per run).

Side by side in one run, interleaved so machine noise hits both alike, each over a kept-alive
connection, one request at a time:
  local sentiment — POST /v1/infer to a real `hybridinfer up` process against onnxruntime
    called in this process on the same model file and text; GET /healthz on the same server
    is the HTTP floor (what any round trip costs here); a second `hybridinfer up` with
    ``inline_below_us`` 0 (every model call on a worker thread, as before ``models/inline.py``)
    is timed in the same rounds, so the hand-off's cost is read side by side;
  pinned chat — POST /v1/chat/completions with a short prompt to a real `hybridinfer gateway`
    process whose one node is the instant upstream (``bench/upstream.py``), against the same
    request sent to that upstream directly: the gateway's whole added cost, privacy scan
    included, with no load on it.
Added = gateway - direct, at p50 and p99. Writes bench/results/overhead.json.
"""

from __future__ import annotations

import http.client
import json
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import onnxruntime as ort

from bench.gateway_overhead import KEY as CHAT_KEY
from bench.gateway_overhead import chat_body, hybridinfer_gateway
from bench.harness import REPO, free_port, gateway_process, percentiles, write_result
from bench.processes import upstream_process
from bench.upstream import MODEL
from hybridinfer.models.catalog import find_model
from hybridinfer.modelzoo import build_models

KEY = "bench-admin-key-0123456789"
TEXT = "the update broke my phone and support never answered"
ROUNDS = 2000
WARMUP = 200
TARGET_P50_MS = 0.5
"""Issue 18's goal for both: the gateway adds at most half a millisecond at p50, unloaded."""


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


def timed_post(
    connection: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]
) -> tuple[float, int, bytes]:
    """One POST: its wall time in ms, status and body."""
    started = time.perf_counter()
    connection.request("POST", path, body, headers)
    response = connection.getresponse()
    payload = response.read()
    return (time.perf_counter() - started) * 1000, response.status, payload


def paired_median(slower: list[float], faster: list[float]) -> dict[str, float]:
    """The median of the per-round differences and a bootstrap 95 % interval of it."""
    differences = np.asarray(slower) - np.asarray(faster)
    rng = np.random.default_rng(18)
    resampled = rng.choice(differences, size=(1000, differences.size), replace=True)
    low, high = np.percentile(np.median(resampled, axis=1), [2.5, 97.5])
    return {
        "median": round(float(np.median(differences)), 4),
        "low": round(float(low), 4),
        "high": round(float(high), 4),
    }


def pinned_chat() -> dict[str, Any]:
    """The instant upstream directly and through the gateway, alternating, one at a time."""
    body = chat_body(MODEL).encode()
    plain = {"Content-Type": "application/json"}
    authed = {**plain, "Authorization": f"Bearer {CHAT_KEY}"}
    direct: list[float] = []
    gateway: list[float] = []
    with (
        tempfile.TemporaryDirectory() as work,
        upstream_process(free_port()) as upstream,
        hybridinfer_gateway(Path(work), upstream) as url,
    ):
        to_upstream = http.client.HTTPConnection(urlsplit(upstream).netloc)
        to_gateway = http.client.HTTPConnection(urlsplit(url).netloc)
        path = "/v1/chat/completions"
        for index in range(ROUNDS + WARMUP):
            direct_ms, status, payload = timed_post(to_upstream, path, body, plain)
            if status != 200:
                raise RuntimeError(f"the upstream answered {status}: {payload[:300]!r}")
            gateway_ms, status, payload = timed_post(to_gateway, path, body, authed)
            if status != 200:
                raise RuntimeError(f"the gateway answered {status}: {payload[:300]!r}")
            if index >= WARMUP:
                direct.append(direct_ms)
                gateway.append(gateway_ms)
    direct_p, gateway_p = percentiles(direct), percentiles(gateway)
    return {
        "what": "pinned chat, short prompt: through the gateway vs the upstream directly",
        "rounds": ROUNDS,
        "direct_ms": direct_p,
        "gateway_ms": gateway_p,
        "added_ms": {q: round(gateway_p[q] - direct_p[q], 4) for q in ("p50", "p99")},
        "target_p50_ms": TARGET_P50_MS,
    }


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
    threaded: list[float] = []
    floor: list[float] = []
    server_stages: dict[str, list[float]] = {}
    threaded_env = {"HYBRIDINFER_INLINE_BELOW_US": "0"}
    with (
        tempfile.TemporaryDirectory() as data_dir,
        tempfile.TemporaryDirectory() as threaded_dir,
        gateway_process(Path(data_dir), KEY, models_dir) as port,
        gateway_process(Path(threaded_dir), KEY, models_dir, threaded_env) as threaded_port,
    ):
        connection = http.client.HTTPConnection("127.0.0.1", port)
        threaded_connection = http.client.HTTPConnection("127.0.0.1", threaded_port)
        for index in range(ROUNDS + WARMUP):
            started = time.perf_counter()
            session.run(None, feeds)
            direct_ms = (time.perf_counter() - started) * 1000
            # The two gateways take turns going first: neither always follows the direct call.
            first_inline = index % 2 == 0
            if not first_inline:
                threaded_ms, threaded_status, _ = timed_post(
                    threaded_connection, "/v1/infer", body, headers
                )
            gateway_ms, status, raw = timed_post(connection, "/v1/infer", body, headers)
            if first_inline:
                threaded_ms, threaded_status, _ = timed_post(
                    threaded_connection, "/v1/infer", body, headers
                )
            started = time.perf_counter()
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            floor_ms = (time.perf_counter() - started) * 1000
            if status != 200 or threaded_status != 200:
                raise RuntimeError(f"gateway answered {status}/{threaded_status}: {raw!r}")
            if index < WARMUP:
                continue
            direct.append(direct_ms)
            gateway.append(gateway_ms)
            threaded.append(threaded_ms)
            floor.append(floor_ms)
            for stage, value in json.loads(raw)["timings_ms"].items():
                server_stages.setdefault(stage, []).append(value)
    direct_p, gateway_p, floor_p = percentiles(direct), percentiles(gateway), percentiles(floor)
    threaded_p = percentiles(threaded)
    chat = pinned_chat()
    result: dict[str, Any] = {
        "what": "local sentiment: through the gateway vs onnxruntime called directly",
        "rounds": ROUNDS,
        "direct_ms": direct_p,
        "gateway_ms": gateway_p,
        "http_floor_ms": floor_p,
        "overhead_ms": {
            "p50": round(gateway_p["p50"] - direct_p["p50"], 4),
            "p99": round(gateway_p["p99"] - direct_p["p99"], 4),
        },
        "threaded_gateway_ms": threaded_p,
        "threaded_overhead_ms": {
            "p50": round(threaded_p["p50"] - direct_p["p50"], 4),
            "p99": round(threaded_p["p99"] - direct_p["p99"], 4),
        },
        # Per round, the threaded gateway's time less the shipped one's: the median and its
        # 95 % interval by bootstrap (rounds are paired, so machine drift cancels).
        "inline_saves_ms": paired_median(threaded, gateway),
        "server_stage_ms_p50": {k: round(float(np.median(v)), 4) for k, v in server_stages.items()},
        "target": f"overhead p50 <= {TARGET_P50_MS} ms",
        "target_p50_ms": TARGET_P50_MS,
        "chat": chat,
    }
    path = write_result("overhead", result)
    print(f"direct onnxruntime   p50 {direct_p['p50']:.3f} ms  p99 {direct_p['p99']:.3f} ms")
    print(f"through the gateway  p50 {gateway_p['p50']:.3f} ms  p99 {gateway_p['p99']:.3f} ms")
    print(f"HTTP floor (healthz) p50 {floor_p['p50']:.3f} ms  p99 {floor_p['p99']:.3f} ms")
    overhead = result["overhead_ms"]
    print(f"overhead             p50 {overhead['p50']:.3f} ms  p99 {overhead['p99']:.3f} ms")
    threaded_overhead = result["threaded_overhead_ms"]
    print(
        f"overhead, model on a thread p50 {threaded_overhead['p50']:.3f} ms  "
        f"p99 {threaded_overhead['p99']:.3f} ms"
    )
    saves = result["inline_saves_ms"]
    print(f"inline run saves per round {saves['median']:.3f} ms [{saves['low']}, {saves['high']}]")
    print(f"server-side stages (p50): {result['server_stage_ms_p50']}")
    for name in ("direct_ms", "gateway_ms", "added_ms"):
        figures = chat[name]
        print(f"pinned chat {name:<10} p50 {figures['p50']:.3f} ms  p99 {figures['p99']:.3f} ms")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
