"""What the retained prompt sample costs (``store/retained.py``, ``route/rescore.py``).

- The request path: one ``RetainedPrompts.offer`` per scored prompt, at the default rate
  (0.05: one draw, rarely an append) and at rate 1.0 (every prompt appended), timed in
  batches of 1,000 calls with the buffer drained between batches as the sink does.
- The sink: writing 1,000 buffered prompts to SQLite with the cap (10,000 rows) and the TTL
  enforced in the same transaction, once the table is full.
- Replay: staged-router re-scoring of retained prompts (MiniLM int8, new texts, no cache).

    python -m bench.retained        # writes bench/results/retained.json
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.difficulty import REPO, scorer
from bench.harness import percentiles, write_result
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.rescore import rescore
from hybridinfer.store.retained import BUFFER, RetainedPrompt, RetainedPrompts, save_retained
from hybridinfer.store.sql import SqlStore

BATCHES = 200
FLUSHES = 20
RESCORED = 200
STAGED = compile_policy(
    "version: staged\nrouter:\n  calibration: reference\n"
    "  capabilities: {chat: {max_quality_drop: 0.7}}\n"
)


def offer_cost(rate: float) -> dict[str, Any]:
    """Nanoseconds per ``offer``, per batch of ``BUFFER`` calls."""
    sample = RetainedPrompts(rate, 10_000, 86_400.0)
    per_call_ns: list[float] = []
    kept = 0
    for batch in range(BATCHES):
        started = time.perf_counter_ns()
        for index in range(BUFFER):
            sample.offer(f"r-{batch}-{index}", "generate", "chat", "a prompt", False)
        per_call_ns.append((time.perf_counter_ns() - started) / BUFFER)
        kept += len(sample.drain())
    return {"rate": rate, "ns_per_offer": percentiles(per_call_ns), "kept": kept}


async def sink_cost() -> dict[str, Any]:
    """Milliseconds per flush of a full buffer into a full table."""
    with tempfile.TemporaryDirectory() as folder:
        store = SqlStore(f"sqlite+aiosqlite:///{Path(folder) / 'state.db'}")
        await store.migrate()
        sample = RetainedPrompts(1.0, 10_000, 86_400.0)
        flushes: list[float] = []
        for flush in range(FLUSHES):
            for index in range(BUFFER):
                sample.offer(f"r-{flush}-{index}", "generate", "chat", "a prompt " * 20, False)
            started = time.perf_counter()
            await save_retained(store, sample, sample.drain())
            if flush >= 10:  # the table is full (10,000 rows) from here on
                flushes.append((time.perf_counter() - started) * 1000.0)
        await store.close()
    return {"rows_per_flush": BUFFER, "cap": 10_000, "ms_per_flush": percentiles(flushes)}


async def rescore_speed() -> dict[str, Any]:
    """Retained prompts re-scored per second under a staged router."""
    sets = yaml.safe_load((REPO / "bench" / "prompts" / "difficulty.yaml").read_text("utf-8"))
    texts = [*sets["easy"], *sets["hard"]]
    prompts = {
        (f"r-{i}", "generate"): RetainedPrompt(
            f"r-{i}", "generate", "chat", 0.0, f"{texts[i % len(texts)]} (case {i})"
        )
        for i in range(RESCORED)
    }
    live = scorer()
    await rescore(live, STAGED, dict(list(prompts.items())[:1]))  # load the model
    started = time.perf_counter()
    found = await rescore(live, STAGED, prompts)
    seconds = time.perf_counter() - started
    live.close()
    cloud = sum(r.verdict is not None and r.verdict.action == "cloud" for r in found.values())
    return {
        "prompts": RESCORED,
        "seconds": round(seconds, 3),
        "prompts_per_s": round(RESCORED / seconds, 1),
        "staged_cloud_share": round(cloud / RESCORED, 4),
    }


def main() -> None:
    result = {
        "offer": [offer_cost(0.05), offer_cost(1.0)],
        "sink": asyncio.run(sink_cost()),
        "rescore": asyncio.run(rescore_speed()),
    }
    path = write_result("retained", result)
    print(yaml.safe_dump(result, sort_keys=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
