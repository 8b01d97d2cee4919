"""The upstream call of a remote subtask, two clients side by side: aiohttp's session as the
gateway used it, and ``backends/httpclient.py`` that replaced it on the request path.

Both POST the same small chat body with the same headers to ``bench/upstream.py`` (a bare
asyncio server answering a fixed completion) on this host's loopback, one call at a time on the
served event loop (uvloop), over a kept-alive connection. Per client:

- **instructions**: Python bytecode instructions per call (``sys.settrace``, as
  ``bench/pathwork.py`` counts them); exact, the same on any machine;
- **CPU**: this process's CPU time per call (the upstream runs in another process);
- **round trip**: the wall time of a call, p50 and p99.

The timed calls run in ``ROUNDS`` rounds that alternate the two clients, so a busy spell of
the shared machine falls on both; the figures are the medians over rounds.

    python -m bench.upstream_client
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from bench.harness import free_port, percentiles, write_result
from bench.pathwork import InstructionCounter
from bench.processes import upstream_process
from bench.upstream import MODEL
from hybridinfer.backends.httpclient import HttpClient
from hybridinfer.server.listener import new_event_loop

BODY = (b'{"model":"%s","messages":[{"role":"user","content":"Say hi."}],"max_tokens":8}') % (
    MODEL.encode()
)
HEADERS = {
    "Content-Type": "application/json",
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
}
TIMEOUT_S = 10.0
WARMUP = 300
COUNTED = 300
ROUNDS = 6
CALLS = 1500
"""Timed calls per client per round."""

Call = Callable[[], Awaitable[tuple[int, bytes]]]


def aiohttp_call(session: aiohttp.ClientSession, url: str) -> Call:
    """The call as ``HttpBackend._send`` made it before: one ``post`` with a total timeout."""

    async def call() -> tuple[int, bytes]:
        async with session.post(
            url, data=BODY, headers=dict(HEADERS), timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)
        ) as response:
            return response.status, await response.read()

    return call


def lean_call(client: HttpClient, url: str) -> Call:
    async def call() -> tuple[int, bytes]:
        return await client.post(url, BODY, HEADERS, TIMEOUT_S)

    return call


async def timed_round(call: Call) -> dict[str, Any]:
    samples: list[float] = []
    cpu_started = time.process_time()
    for _ in range(CALLS):
        started = time.perf_counter()
        status, _body = await call()
        samples.append((time.perf_counter() - started) * 1000.0)
        if status != 200:
            raise RuntimeError(f"the upstream answered {status}")
    cpu_us = (time.process_time() - cpu_started) / CALLS * 1e6
    return {"cpu_us": cpu_us, **percentiles(samples)}


async def counted(call: Call) -> float:
    for _ in range(WARMUP):
        await call()
    with InstructionCounter() as counter:
        for _ in range(COUNTED):
            await call()
    return sum(counter.instructions.values()) / COUNTED


async def measure(base_url: str) -> dict[str, Any]:
    url = f"{base_url}/v1/chat/completions"
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=100), cookie_jar=aiohttp.DummyCookieJar()
    )
    client = HttpClient()
    calls = {"aiohttp": aiohttp_call(session, url), "httpclient": lean_call(client, url)}
    try:
        instructions = {name: await counted(call) for name, call in calls.items()}
        rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in calls}
        for index in range(ROUNDS):
            order = list(calls) if index % 2 == 0 else list(reversed(calls))
            for name in order:
                rounds[name].append(await timed_round(calls[name]))
    finally:
        await session.close()
        await client.aclose()
    rows = {
        name: {
            "instructions_per_call": round(instructions[name], 1),
            "cpu_us": round(statistics.median(r["cpu_us"] for r in rounds[name]), 1),
            "p50_ms": round(statistics.median(r["p50"] for r in rounds[name]), 4),
            "p99_ms": round(statistics.median(r["p99"] for r in rounds[name]), 4),
            "cpu_us_by_round": [round(r["cpu_us"], 1) for r in rounds[name]],
        }
        for name in calls
    }
    old, new = rows["aiohttp"], rows["httpclient"]
    return {
        "rows": rows,
        "ratios": {
            "instructions": round(old["instructions_per_call"] / new["instructions_per_call"], 2),
            "cpu": round(old["cpu_us"] / new["cpu_us"], 2),
            "p50": round(old["p50_ms"] / new["p50_ms"], 2),
        },
    }


def main() -> None:
    with (
        upstream_process(free_port()) as base_url,
        asyncio.Runner(loop_factory=new_event_loop) as runner,
    ):
        result = runner.run(measure(base_url))
    result["what"] = (
        f"one POST of a chat body to bench/upstream.py over loopback keep-alive, one at a time "
        f"on uvloop; {ROUNDS} alternating rounds of {CALLS} calls per client, medians of rounds"
    )
    path = write_result("upstream_client", result)
    for name, row in result["rows"].items():
        print(
            f"{name:>10}: {row['instructions_per_call']:7.0f} instructions, "
            f"{row['cpu_us']:6.1f} µs CPU, round trip p50 {row['p50_ms']:.3f} ms "
            f"p99 {row['p99_ms']:.3f} ms"
        )
    ratios = result["ratios"]
    print(
        f"aiohttp / httpclient: instructions {ratios['instructions']}x, CPU {ratios['cpu']}x, "
        f"p50 {ratios['p50']}x"
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
