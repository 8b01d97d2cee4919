"""Local vs cloud chat: time to first token and tokens/s of both LLMs, direct and through the
gateway (streaming, model pinned), on this machine. Writes ``bench/results/llm.json``.

Run: ``python -m bench.llm [--runs 5] [--max-tokens 64]`` (needs the `llm` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn
from pydantic import SecretStr

from bench.harness import free_port, machine, write_result
from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.server.llmserver import LlmServer, default_specs, start_servers
from hybridinfer.settings import Settings

KEY = "bench-admin-key-0123456789"
PROMPT = [{"role": "user", "content": "Write a short story about a lighthouse keeper."}]
RUNS = 5
MAX_TOKENS = 64
CUT_STREAMS: list[str] = []
"""Streams that broke off (retried); reported, since a bench must not hide them."""


async def stream_once(
    client: httpx.AsyncClient, url: str, model: str, max_tokens: int
) -> dict[str, float]:
    """One streamed answer: seconds to the first content token, content pieces per second."""
    body = {"model": model, "messages": PROMPT, "max_tokens": max_tokens, "stream": True}
    started = time.perf_counter()
    first: float | None = None
    pieces = 0
    async with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = orjson.loads(line[6:])
            if "error" in event:
                raise RuntimeError(event["error"])
            if event["choices"] and event["choices"][0]["delta"].get("content"):
                pieces += 1
                first = first if first is not None else time.perf_counter()
    ended = time.perf_counter()
    ttft = (first or ended) - started
    rate = (pieces - 1) / (ended - first) if first is not None and pieces > 1 else 0.0
    return {"ttft_ms": ttft * 1000.0, "tokens_per_s": rate, "tokens": float(pieces)}


def summary(samples: list[dict[str, float]]) -> dict[str, float]:
    return {
        name: round(statistics.median(s[name] for s in samples), 2)
        for name in ("ttft_ms", "tokens_per_s", "tokens")
    }


async def stream_fresh(url: str, model: str, max_tokens: int) -> dict[str, float]:
    # A new connection per answer: llama.cpp's server (sse-starlette) has been seen cutting a
    # stream sent on a reused keep-alive connection.
    headers = {"Authorization": f"Bearer {KEY}"}
    for _ in range(3):
        try:
            async with httpx.AsyncClient(timeout=120, headers=headers) as client:
                return await stream_once(client, url, model, max_tokens)
        except (httpx.HTTPError, RuntimeError) as exc:
            CUT_STREAMS.append(f"{url}: {type(exc).__name__}: {exc}")
    raise RuntimeError(f"{url} failed three times: {CUT_STREAMS[-1]}")


async def measure(
    server: LlmServer, gateway_url: str, runs: int, max_tokens: int
) -> dict[str, Any]:
    model = server.spec.model
    direct_url = f"{server.url}/v1/chat/completions"
    await stream_fresh(direct_url, model, max_tokens)  # warm up
    direct = [await stream_fresh(direct_url, model, max_tokens) for _ in range(runs)]
    through_url = f"{gateway_url}/v1/chat/completions"
    through = [await stream_fresh(through_url, model, max_tokens) for _ in range(runs)]
    return {
        "model": model,
        "tier": server.spec.tier.value,
        "direct": summary(direct),
        "gateway": summary(through),
    }


async def main(runs: int, max_tokens: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        specs = [s for s in default_specs(Path(tmp), 1500, 0.0002) if not s.embedding]
        servers = await start_servers(specs, free_port(), threads=1, context_tokens=2048)
        settings = Settings(
            data_dir=Path(tmp),
            port=free_port(),
            local_models=[],
            bootstrap_key=SecretStr(KEY),
            static_nodes=[s.spec.registration(s.url) for s in servers],
        )
        server = uvicorn.Server(
            uvicorn.Config(
                create_app(ControlPlane(settings)), port=settings.port, log_level="warning"
            )
        )
        serving = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 - uvicorn exposes readiness only as a flag
            await asyncio.sleep(0.05)
        try:
            gateway_url = f"http://127.0.0.1:{settings.port}"
            tiers = [await measure(s, gateway_url, runs, max_tokens) for s in servers]
        finally:
            server.should_exit = True
            await serving
            await asyncio.gather(*(s.stop() for s in servers))
    result = {
        "machine": machine(),
        "runs": runs,
        "max_tokens": max_tokens,
        "threads_per_llm": 1,
        "tiers": tiers,
        "cut_streams": CUT_STREAMS,
    }
    path = write_result("llm", result)
    for tier in tiers:
        print(
            f"{tier['tier']:6} {tier['model']:14} direct TTFT {tier['direct']['ttft_ms']:7.1f} ms "
            f"{tier['direct']['tokens_per_s']:5.1f} tok/s | gateway TTFT "
            f"{tier['gateway']['ttft_ms']:7.1f} ms {tier['gateway']['tokens_per_s']:5.1f} tok/s"
        )
    print(f"cut streams (retried): {len(CUT_STREAMS)}; wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="Answers per tier and path.")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.max_tokens))
