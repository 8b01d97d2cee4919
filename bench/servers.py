"""uvicorn + httptools (the gateway's server) against Granian, side by side (issue 18, step 2).

Two apps, each served by both servers in turn, each server in a process of its own (one
worker, one event-loop thread; Granian's Rust runtime on one thread too), driven by the same
open-loop generator (``bench/loadgen.py``, a process of its own) at a fixed rate:

- ``bare``: an ASGI app that answers every request with the same small JSON body: what the
  server alone costs;
- ``gateway``: the whole gateway (``hybridinfer.gateway.app.create_app``, built as
  ``hybridinfer gateway`` builds it) on one static `openai` node on ``bench/upstream.py``,
  model pinned, key checked, traces and metrics on.

Rounds alternate the servers (uvicorn, granian, uvicorn, ...), so machine noise falls on both
alike. Per run: the server process's CPU per answered request (``/proc/PID/stat``, every
thread), latency from each request's scheduled send time, errors, the generator's own CPU and
the host's load average. Granian is not a dependency of the project: without it installed the
bench says so and measures uvicorn alone.

What the comparison does not settle by itself is whether Granian holds the gateway's
guarantees; ``GUARANTEES`` records what was checked against its API, and the verdict keeps
the faster server only if it holds all of them.

Writes ``bench/results/servers.json``. Run: ``python -m bench.servers [--rates R,R] [--duration S]
[--rounds N]``; a server alone: ``python -m bench.servers serve --server granian --app bare``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from itertools import product
from pathlib import Path
from typing import Any

from bench.gateway_overhead import GATEWAY_CONFIG, KEY, Target, load
from bench.harness import free_port, write_result
from bench.processes import server_process, upstream_process
from bench.upstream import MODEL

SERVERS = ("uvicorn", "granian")
APPS = ("bare", "gateway")
BARE_BODY = b'{"ok":true}'
# What the gateway's server must do (server/serving.py, server/listener.py) and whether
# Granian 2.8's embeddable server does it, from its API (``granian.server.embed.Server``) and
# the scope it builds (printed by a scope-echoing app: its ``extensions`` hold only
# ``http.response.pathsend`` and ``websocket.http.response``). Not exercised by this bench.
GUARANTEES: dict[str, tuple[bool, str]] = {
    "slow-client header timeout: 408 with the error envelope and X-Request-ID": (
        False,
        "HTTP1Settings.header_read_timeout closes the connection, without the 408 envelope",
    ),
    "listen backlog (listen_backlog)": (True, "backlog="),
    "TLS": (True, "ssl_cert / ssl_key"),
    "mutual TLS: the client certificate's subject in the scope (node routes)": (
        False,
        "ssl_client_verify checks the certificate; no TLS extension carries its subject",
    ),
    "workers on one port under the gateway's own supervision (--workers)": (
        False,
        "it brings its own process manager in place of server/workers.py",
    ),
}


async def bare_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    while (await receive()).get("more_body"):
        pass
    headers = [(b"content-type", b"application/json"), (b"content-length", b"11")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BARE_BODY})


def gateway_app(config: Path) -> Any:
    from hybridinfer.control.plane import ControlPlane
    from hybridinfer.gateway.app import create_app
    from hybridinfer.settings import load_settings

    return create_app(ControlPlane(load_settings(config)))


async def serve(server: str, app_name: str, port: int, config: Path | None) -> None:
    """One server on ``port`` until killed."""
    app = bare_app if app_name == "bare" else gateway_app(config or Path())
    if server == "uvicorn":
        import uvicorn

        from hybridinfer.server.serving import server_config

        await uvicorn.Server(server_config(app, "127.0.0.1", port, lifespan="on")).serve()
        return
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.server.embed import Server

    granian = Server(
        app,
        address="127.0.0.1",
        port=port,
        interface=Interfaces.ASGI,
        http=HTTPModes.http1,
        http1_settings=HTTP1Settings(header_read_timeout=10_000),
        runtime_threads=1,
        log_enabled=False,
    )
    await granian.serve()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` (every thread), from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def server_under_test(
    server: str, app_name: str, work: Path, upstream: str
) -> Iterator[tuple[str, int]]:
    """The server process (its URL and pid), ready."""
    port = free_port()
    command = [sys.executable, "-m", "bench.servers", "serve", "--server", server]
    command += ["--app", app_name, "--port", str(port)]
    ready = f"http://127.0.0.1:{port}/healthz"
    if app_name == "gateway":
        config = work / f"gateway-{port}.yaml"
        data_dir = work / f"data-{port}"
        config.write_text(
            GATEWAY_CONFIG.format(port=port, data_dir=data_dir, upstream=upstream, model=MODEL)
        )
        command += ["--config", str(config)]
        ready = f"http://127.0.0.1:{port}/readyz"
    env = {**os.environ, "HYBRIDINFER_BOOTSTRAP_KEY": KEY}
    log = work / f"{server}-{app_name}-{port}.log"
    with server_process(command, ready, f"{server} {app_name}", log, env) as process:
        yield f"http://127.0.0.1:{port}", process.pid


def one_run(
    server: str, app_name: str, work: Path, upstream: str, rate: float, duration_s: float
) -> dict[str, Any]:
    with server_under_test(server, app_name, work, upstream) as (url, pid):
        target = Target(server, url, [f"Authorization: Bearer {KEY}"])
        load(target, rate, 3.0, timeout_s=2.0, warmup_s=1.0)  # connections, caches, JIT-free
        before = cpu_seconds(pid)
        load_before = os.getloadavg()[0]
        result = load(target, rate, duration_s, timeout_s=2.0, warmup_s=0.0)
        spent = cpu_seconds(pid) - before
    answered = max(1, round(result["requests"] * (1 - result["error_rate"])))
    return {
        "server": server,
        "app": app_name,
        "rate": rate,
        "duration_s": duration_s,
        "latency_ms": result["latency_ms"],
        "error_rate": result["error_rate"],
        "server_cpu_us_per_request": round(spent / answered * 1e6, 1),
        "generator_cpu_share": round(result["generator_cpu"] / duration_s, 3),
        "load_average_before": round(load_before, 2),
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per app, server and rate: the median over rounds of CPU per request, p50 and p99."""
    table: dict[str, dict[str, Any]] = {}
    for key in dict.fromkeys((run["app"], run["server"], run["rate"]) for run in runs):
        mine = [run for run in runs if (run["app"], run["server"], run["rate"]) == key]
        table["{}/{}@{:.0f}".format(*key)] = {
            "rounds": len(mine),
            "cpu_us_per_request": statistics.median(
                run["server_cpu_us_per_request"] for run in mine
            ),
            "p50_ms": statistics.median(run["latency_ms"].get("p50", 0.0) for run in mine),
            "p99_ms": statistics.median(run["latency_ms"].get("p99", 0.0) for run in mine),
            "max_error_rate": max(run["error_rate"] for run in mine),
        }
    return table


def verdict(table: dict[str, dict[str, Any]], rate: float) -> str:
    """Which server the gateway keeps: Granian only if it is cheaper at ``rate`` and holds
    every guarantee."""
    uvicorn = table.get(f"gateway/uvicorn@{rate:.0f}")
    granian = table.get(f"gateway/granian@{rate:.0f}")
    if uvicorn is None or granian is None:
        return "granian not installed: measured alone, uvicorn kept"
    ratio = granian["cpu_us_per_request"] / uvicorn["cpu_us_per_request"]
    missing = [name for name, (held, _) in GUARANTEES.items() if not held]
    cheaper = "granian" if ratio < 1 else "uvicorn"
    kept = "granian" if ratio < 1 and not missing else "uvicorn"
    why = f"; granian lacks {len(missing)} guarantees" if missing else ""
    return (
        f"gateway CPU per request at {rate:.0f}/s granian/uvicorn = {ratio:.2f} "
        f"({cheaper} cheaper){why}: "
        f"{kept} kept"
    )


def measure(rates: list[float], duration_s: float, rounds: int) -> dict[str, Any]:
    servers = SERVERS if importlib.util.find_spec("granian") else SERVERS[:1]
    runs: list[dict[str, Any]] = []
    started = time.monotonic()
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-servers-")))
        upstream = stack.enter_context(upstream_process(free_port()))
        for round_index in range(rounds):
            for rate, app_name, server in product(rates, APPS, servers):
                run = one_run(server, app_name, work, upstream, rate, duration_s)
                run["round"] = round_index
                runs.append(run)
                print(
                    f"  {app_name:<8} {server:<8} {rate:>5.0f}/s round {round_index}: "
                    f"{run['server_cpu_us_per_request']:8.1f} µs CPU/request, "
                    f"p50 {run['latency_ms'].get('p50')} ms, "
                    f"p99 {run['latency_ms'].get('p99')} ms, "
                    f"errors {run['error_rate']:.2%}",
                    flush=True,
                )
    table = summary(runs)
    return {
        "rates": rates,
        "duration_s": duration_s,
        "rounds": rounds,
        "seconds": round(time.monotonic() - started, 1),
        "granian_installed": len(servers) == 2,
        "runs": runs,
        "summary": table,
        "guarantees": {
            name: {"held": held, "how": how} for name, (held, how) in GUARANTEES.items()
        },
        "verdicts": [verdict(table, rate) for rate in rates],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    one = sub.add_parser("serve", help="Run one server until killed.")
    one.add_argument("--server", choices=SERVERS, required=True)
    one.add_argument("--app", choices=APPS, required=True)
    one.add_argument("--port", type=int, required=True)
    one.add_argument("--config", type=Path)
    parser.add_argument("--rates", default="200,400", help="Comma-separated requests/s.")
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.command == "serve":
        asyncio.run(serve(args.server, args.app, args.port, args.config))
        return
    report = measure([float(rate) for rate in args.rates.split(",")], args.duration, args.rounds)
    print(json.dumps(report["summary"], indent=2))
    print("\n".join(report["verdicts"]))
    write_result("servers", report)


if __name__ == "__main__":
    main()
