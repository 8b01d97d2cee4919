"""Gateway overhead on chat: the same upstream direct, through hybridinfer, through LiteLLM.

One minimal OpenAI-style upstream (``bench/upstream.py``, a fixed tiny completion) is called
three ways by the same open-loop load generator (``bench/loadgen.py``, its own process):

  direct      — POST /v1/chat/completions on the upstream itself;
  hybridinfer — ``hybridinfer gateway --config``: one static `openai` node on the upstream,
                the model pinned by name, API key checked, traces, metrics and the JSON access
                log (into the gateway's log file) as a default gateway writes them;
  litellm     — LiteLLM's proxy 1.108.7, one worker, one model_list entry on the upstream,
                master key set, no database, no callbacks, logging at ERROR;
  hybridinfer-2w — with ``--workers 2``: the same gateway as two worker processes on one
                port (SO_REUSEPORT), on Redis and a fresh PostgreSQL database as workers
                require (``HYBRIDINFER_BENCH_POSTGRES``, ``HYBRIDINFER_BENCH_REDIS``);
  hybridinfer-new, -auto, -auto-new — the one-process gateway at the fixed rates only: the
                pinned model with a word of its own in every prompt (nothing one request's
                privacy scan read serves the next), and ``model: "auto"`` with the same prompt
                and with new ones (the router reads each prompt; auto minus pinned is its cost).

Fixed rates (10, 30, 100, 300, 1,000 RPS) run every path back to back at each rate, so machine
noise falls on all alike (a path that failed a rate is not run at the higher ones); then each
one's highest burst rate (3 s runs, < 1 % errors and p99 < 1 s) is searched in interleaved
rounds, and from it the highest *sustained* rate: the same rule over
a 30 s hold after 5 s of warm-up, a fifth lower per failed hold until one holds, then up to
the burst search's first failure and a quarter higher per held rate until a hold fails, then
bisecting towards the lowest failed hold until the two are within a tenth. Added latency =
gateway - direct at the same percentile.

    python -m bench.gateway_overhead [--workers 2] [--no-litellm] [--hold S] [--duration S]

Writes bench/results/gateway_overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.harness import REPO, free_port, write_result
from bench.litellm_proxy import ensure_installed, litellm_proxy
from bench.processes import server_process, upstream_process
from bench.scaleout import POSTGRES, REDIS_URL, admin
from bench.upstream import MODEL

RATES = (10, 30, 100, 300, 1000)
KEY = "bench-admin-key-0123456789"
LITELLM_KEY = "sk-bench-0123456789abcdef0123456789abcdef"
VARY = "XXXXXXXX"
"""Where a run with new prompts puts a word of its own in every request."""


def chat_body(model: str, vary: bool = False) -> str:
    """The benchmark's short chat for ``model``; with ``vary``, a word of its own per request."""
    content = f"Say ok ({VARY})." if vary else "Say ok."
    messages = [{"role": "user", "content": content}]
    return json.dumps({"model": model, "messages": messages, "max_tokens": 8})


BODY = chat_body(MODEL)

GATEWAY_CONFIG = """\
port: {port}
data_dir: {data_dir}
local_models: []
rate_limit_per_minute: 1000000000
answer_cache: "off"  # one repeated body: reuse would measure the cache, not the path
static_nodes:
  - id: bench-upstream
    tier: cloud
    zone: public
    url: {upstream}
    protocol: openai
    deployments:
      - {{model: {model}, version: "1", capability: chat, quality: 0.5, latency_ms: 1.0}}
"""


@dataclass(slots=True)
class Target:
    """One way to reach the upstream."""

    name: str
    url: str
    headers: list[str] = field(default_factory=list)
    body: str = BODY
    """Where the body holds ``VARY``, the generator puts a word of its own there per request."""


def load(
    target: Target, rate: float, duration_s: float, timeout_s: float, warmup_s: float = 1.0
) -> dict[str, Any]:
    """One open-loop run in a separate generator process (``warmup_s`` unrecorded first)."""
    command = [sys.executable, "-m", "bench.loadgen", "--url", f"{target.url}/v1/chat/completions"]
    command += ["--rate", str(rate), "--duration", str(duration_s), "--warmup", str(warmup_s)]
    command += ["--timeout", str(timeout_s), "--body", target.body]
    if VARY in target.body:
        command += ["--vary", VARY]
    for header in target.headers:
        command += ["--header", header]
    finished = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=duration_s + timeout_s + 60
    )
    if finished.returncode != 0:
        raise RuntimeError(f"load generator failed: {finished.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(finished.stdout)
    return result


def sustains(result: dict[str, Any]) -> bool:
    """The acceptance rule of a sustained rate: < 1 % errors and p99 < 1 s."""
    p99 = result["latency_ms"].get("p99", float("inf"))
    return bool(result["error_rate"] < 0.01 and p99 < 1000.0)


@dataclass(slots=True)
class RateSearch:
    """Doubling from ``start`` until a rate fails, then bisecting ``refinements`` times."""

    start: float
    ceiling: float
    refinements: int = 3
    passed: float = 0.0
    failed: float | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)

    def next_rate(self) -> float | None:
        if not self.steps:
            return self.start
        if self.failed is None:
            rate = self.passed * 2
            return rate if rate <= self.ceiling else None
        first_failure = next(i for i, step in enumerate(self.steps) if not step["sustained"])
        if len(self.steps) - first_failure - 1 >= self.refinements:
            return None
        if not self.passed:
            return self.failed / 2
        if self.failed / self.passed < 1.1:
            return None
        return float(round((self.passed + self.failed) / 2))

    def record(self, rate: float, result: dict[str, Any]) -> bool:
        ok = sustains(result)
        self.steps.append({"rate": rate, "sustained": ok, **_brief(result)})
        if ok:
            self.passed = max(self.passed, rate)
        else:
            self.failed = rate if self.failed is None else min(self.failed, rate)
        return ok


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    latency = result["latency_ms"]
    return {
        "p50_ms": latency.get("p50"),
        "p99_ms": latency.get("p99"),
        "error_rate": result["error_rate"],
        "error_kinds": result["error_kinds"],
        "generator_cpu": result["generator_cpu"],
    }


def settle(target: Target, timeout_s: float = 15.0) -> None:
    """After an overload, wait until the target answers promptly again (its backlog drained),
    so the next run does not inherit it."""
    request = urllib.request.Request(
        f"{target.url}/v1/chat/completions",
        BODY.encode(),
        dict(
            header.split(": ", 1) for header in ["Content-Type: application/json", *target.headers]
        ),
    )
    deadline = time.monotonic() + timeout_s
    prompt = 0
    while prompt < 3 and time.monotonic() < deadline:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()
            prompt = prompt + 1 if time.monotonic() - started < 0.1 else 0
        except OSError:
            prompt = 0
        time.sleep(0.2)


def fixed_rates(targets: list[Target], duration_s: float) -> list[dict[str, Any]]:
    """Every target at each of ``RATES`` back to back; a target that did not sustain a rate is
    not run at the higher ones (its backlog would only spill onto the next target's run)."""
    rows = []
    failed: set[str] = set()
    for rate in RATES:
        for target in targets:
            if target.name in failed:
                print(f"  {rate:>4} RPS {target.name:<12} not run: failed a lower rate", flush=True)
                continue
            result = load(target, rate, duration_s, timeout_s=5.0)
            rows.append({"target": target.name, **result})
            latency = result["latency_ms"]
            print(
                f"  {rate:>4} RPS {target.name:<12} p50 {latency.get('p50', 'n/a')} ms  "
                f"p99 {latency.get('p99', 'n/a')} ms  errors {result['error_rate']:.2%}  "
                f"generator CPU {result['generator_cpu']:.0%}",
                flush=True,
            )
            if not sustains(result):
                failed.add(target.name)
                settle(target)
    return rows


class Search(Protocol):
    """One target's rate search: the next rate to run (None: done) and its verdict."""

    def next_rate(self) -> float | None: ...
    def record(self, rate: float, result: dict[str, Any]) -> bool: ...


def interleave(
    targets: list[Target],
    searches: dict[str, Search],
    label: str,
    duration_s: float,
    warmup_s: float,
) -> None:
    """Runs every target's search to its end in rounds, one run per target a round, so
    machine noise falls on all alike; after a failed run, waits for the target to settle."""
    active = list(targets)
    while active:
        for target in list(active):
            search = searches[target.name]
            rate = search.next_rate()
            if rate is None:
                active.remove(target)
                continue
            result = load(target, rate, duration_s, timeout_s=2.0, warmup_s=warmup_s)
            ok = search.record(rate, result)
            print(
                f"  {label} {target.name:<12} {rate:>6.0f} RPS over {duration_s:.0f} s: "
                f"{'sustained' if ok else 'not sustained'} "
                f"(p99 {result['latency_ms'].get('p99', 'n/a')} ms, "
                f"errors {result['error_rate']:.2%})",
                flush=True,
            )
            if not ok:
                settle(target)


def search_burst(targets: list[Target], duration_s: float) -> dict[str, Any]:
    """Each target's highest rate over short runs, searched in rounds that interleave the
    targets: a burst figure (a few seconds of queueing fit in p99 < 1 s), the start of the
    sustained holds, never reported as sustained."""
    searches = {target.name: RateSearch(start=10, ceiling=12_800) for target in targets}
    interleave(targets, dict(searches), "search", duration_s, warmup_s=1.0)
    return {
        name: {
            "burst_rps": search.passed,
            "first_failed_rps": search.failed,
            "steps": search.steps,
        }
        for name, search in searches.items()
    }


HOLD_S = 30.0
HOLD_WARMUP_S = 5.0
HOLD_ATTEMPTS = 5
HOLD_STEP_DOWN = 0.8
HOLD_STEP_UP = 1.25
HOLD_RESOLUTION = 1.1
"""The holds stop once the lowest failed rate is within this factor of the highest held one."""


@dataclass(slots=True)
class HoldSearch:
    """One target's holds: from its burst rate down by a fifth per failed hold until one
    holds; while none has failed, up to the burst search's first failure and then a quarter
    higher per held rate; once one has, halving the gap between the highest held rate and the
    lowest failed one until they are within ``HOLD_RESOLUTION`` of each other; at most
    ``HOLD_ATTEMPTS`` holds. Stepping down alone would claim 768 where the gateway fails 960:
    a figure up to a fifth low, whatever the gateway holds between. A burst's failure is not a
    hold's: a spell of refusals that a 30 s hold absorbs fails a 3 s run (35 refusals, 1.9 %,
    failed one process's 600 RPS burst at 69cac67), so that rate is held, not assumed to fail.
    A target whose burst search failed nothing (it stopped at its ceiling) is not held above
    it."""

    start: float
    hold_s: float
    burst_failed: float | None = None
    attempts: int = HOLD_ATTEMPTS
    passed: float = 0.0
    failed: float | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)

    def next_rate(self) -> float | None:
        if len(self.steps) >= self.attempts:
            return None
        if not self.steps:
            rate = float(round(self.start))
        elif not self.passed:
            assert self.failed is not None  # every hold so far failed
            rate = float(round(self.failed * HOLD_STEP_DOWN))
        elif self.failed is None:  # every hold so far held
            if self.burst_failed is None:
                return None
            above = self.burst_failed > self.passed
            rate = float(round(self.burst_failed if above else self.passed * HOLD_STEP_UP))
        else:
            if self.failed <= self.passed * HOLD_RESOLUTION:
                return None
            rate = float(round((self.passed + self.failed) / 2))
        return rate if rate >= 1 else None

    def record(self, rate: float, result: dict[str, Any]) -> bool:
        ok = sustains(result)
        self.steps.append({"rate": rate, "sustained": ok, "held_s": self.hold_s, **_brief(result)})
        if ok:
            self.passed = max(self.passed, rate)
        else:
            self.failed = rate if self.failed is None else min(self.failed, rate)
        return ok

    def summary(self) -> dict[str, Any]:
        """The highest rate held and the lowest one that failed (None: none failed)."""
        return {"sustained_rps": self.passed, "first_failed_rps": self.failed, "steps": self.steps}


def hold_sustained(targets: list[Target], burst: dict[str, Any], hold_s: float) -> dict[str, Any]:
    """Each target's highest rate held ``hold_s`` after a warm-up (``HoldSearch``), the
    targets interleaved hold by hold."""
    searches = {
        target.name: HoldSearch(
            float(burst[target.name]["burst_rps"]),
            hold_s,
            burst[target.name].get("first_failed_rps"),
        )
        for target in targets
    }
    interleave(targets, dict(searches), "hold", hold_s, warmup_s=HOLD_WARMUP_S)
    return {name: search.summary() for name, search in searches.items()}


GOODPUT_FACTOR = 2.0
REPEAT_RATE, REPEAT_RUNS, REPEAT_S = 300.0, 5, 20.0


def repeats(targets: list[Target]) -> dict[str, list[dict[str, Any]]]:
    """``REPEAT_RUNS`` runs of ``REPEAT_S`` at ``REPEAT_RATE``, the direct call and each
    hybridinfer path back to back in every run: whether the tail holds from run to run."""
    chosen = [t for t in targets if t.name == "direct" or t.name.startswith("hybridinfer")]
    found: dict[str, list[dict[str, Any]]] = {target.name: [] for target in chosen}
    for run in range(REPEAT_RUNS):
        for target in chosen:
            result = load(target, REPEAT_RATE, REPEAT_S, timeout_s=2.0)
            found[target.name].append(_brief(result))
            print(
                f"  run {run + 1} {target.name:<14} p50 {result['latency_ms'].get('p50')} ms, "
                f"p99 {result['latency_ms'].get('p99')} ms, errors {result['error_rate']:.2%}",
                flush=True,
            )
    return found


def goodput(targets: list[Target], sustained: dict[str, Any], hold_s: float) -> dict[str, Any]:
    """Each gateway at twice its sustained rate for ``hold_s`` after a warm-up: answers per
    second against the sustained rate, refusals with and without ``Retry-After``, p99 of the
    answered (from each request's scheduled time) and every other failure."""
    found: dict[str, Any] = {}
    for target in targets:
        rate = GOODPUT_FACTOR * float(sustained[target.name]["sustained_rps"])
        if target.name == "direct" or rate < 1:
            continue
        result = load(target, rate, hold_s, timeout_s=2.0, warmup_s=HOLD_WARMUP_S)
        kinds: dict[str, int] = result["error_kinds"]
        answered_per_s = result["ok"] / hold_s
        found[target.name] = {
            "offered_rps": rate,
            "sustained_rps": rate / GOODPUT_FACTOR,
            "answered_per_s": round(answered_per_s, 1),
            "goodput_share": round(answered_per_s / (rate / GOODPUT_FACTOR), 4),
            "refused_503": kinds.get("HTTP 503", 0),
            "refused_without_retry_after": kinds.get("HTTP 503 without Retry-After", 0),
            "other_failures": {
                kind: n for kind, n in kinds.items() if not kind.startswith("HTTP 503")
            },
            **_brief(result),
        }
        print(
            f"  {target.name:<12} at {rate:.0f} RPS (2x sustained) for {hold_s:.0f} s: "
            f"{answered_per_s:.0f} answered/s, {found[target.name]['refused_503']} refused, "
            f"p99 of the answered {result['latency_ms'].get('p99', 'n/a')} ms",
            flush=True,
        )
        settle(target)
    return found


@contextmanager
def hybridinfer_gateway(work_dir: Path, upstream: str, workers: int = 1) -> Iterator[str]:
    """``hybridinfer gateway --config`` with one static `openai` node on the upstream; with
    ``workers`` > 1, ``--workers`` on Redis and a fresh PostgreSQL database."""
    port = free_port()
    config = work_dir / f"hybridinfer-{workers}.yaml"
    text = GATEWAY_CONFIG.format(
        port=port, data_dir=work_dir / f"data-{workers}", upstream=upstream, model=MODEL
    )
    env = {**os.environ, "HYBRIDINFER_BOOTSTRAP_KEY": KEY}
    command = [sys.executable, "-m", "hybridinfer", "gateway", "--config", str(config)]
    url = f"http://127.0.0.1:{port}"
    log = work_dir / f"hybridinfer-{workers}.log"
    with ExitStack() as stack:
        if workers > 1:
            store_url = stack.enter_context(fresh_database())
            text += f"cache: redis\ncache_prefix: 'bench-{port}:'\n"
            env |= {"HYBRIDINFER_STORE_URL": store_url, "HYBRIDINFER_REDIS_URL": REDIS_URL}
            command += ["--workers", str(workers)]
        config.write_text(text)
        stack.enter_context(server_process(command, f"{url}/readyz", "hybridinfer", log, env))
        wait_for_workers(url, workers)
        yield url


@contextmanager
def fresh_database() -> Iterator[str]:
    """A new PostgreSQL database (its store URL), dropped afterwards."""
    name = f"hi_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{POSTGRES.replace('postgresql://', 'postgresql+asyncpg://')}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def wait_for_workers(url: str, workers: int, timeout_s: float = 120.0) -> None:
    """Until every worker has answered /readyz (new connections find each in turn), so no
    load starts while one is still loading."""
    if workers <= 1:
        return
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    while len(seen) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only workers {sorted(seen)} of {workers} answered at {url}")
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=5) as response:
                if response.status == 200:
                    seen.add(response.headers.get("x-hybridinfer-worker", "?"))
        except OSError:
            pass
        time.sleep(0.05)


def added(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rate and gateway: latency minus the direct call's, at p50, p95 and p99."""
    direct = {row["rate"]: row["latency_ms"] for row in rows if row["target"] == "direct"}
    table = []
    for row in rows:
        base = direct.get(row["rate"], {})
        if row["target"] == "direct" or not row["latency_ms"] or not base:
            continue
        entry = {"rate": row["rate"], "target": row["target"], "sustained": sustains(row)}
        for quantile in ("p50", "p95", "p99"):
            entry[quantile] = round(row["latency_ms"][quantile] - base[quantile], 3)
        table.append(entry)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="Seconds per fixed rate.")
    parser.add_argument("--search-duration", type=float, default=3.0, help="Burst runs (s).")
    parser.add_argument("--hold", type=float, default=HOLD_S, help="Sustained holds (s).")
    parser.add_argument("--no-litellm", action="store_true", help="Skip LiteLLM entirely.")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Also run hybridinfer with --workers N (needs Redis and PostgreSQL), side by side.",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()
    litellm_version = (
        None if args.no_litellm else ensure_installed(REPO / ".hybridinfer" / "litellm-install.log")
    )
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        work = Path(tmp)
        upstream = stack.enter_context(upstream_process(free_port()))
        targets = [Target("direct", upstream)]
        one = stack.enter_context(hybridinfer_gateway(work, upstream))
        auth = [f"Authorization: Bearer {KEY}"]
        targets.append(Target("hybridinfer", one, auth))
        # The fixed rates only: the same gateway with a new prompt every request, and with
        # `model: "auto"` (the router reads the prompt), each beside the pinned model.
        variants = [
            Target("hybridinfer-new", one, auth, chat_body(MODEL, vary=True)),
            Target("hybridinfer-auto", one, auth, chat_body("auto")),
            Target("hybridinfer-auto-new", one, auth, chat_body("auto", vary=True)),
        ]
        if args.workers > 1:
            many = stack.enter_context(hybridinfer_gateway(work, upstream, args.workers))
            targets.append(
                Target(f"hybridinfer-{args.workers}w", many, [f"Authorization: Bearer {KEY}"])
            )
        if litellm_version is not None:
            proxy = stack.enter_context(
                litellm_proxy(work, free_port(), upstream, MODEL, LITELLM_KEY)
            )
            targets.append(Target("litellm", proxy, [f"Authorization: Bearer {LITELLM_KEY}"]))
        print("fixed rates (targets back to back at each rate):", flush=True)
        rows = fixed_rates([*targets[:2], *variants, *targets[2:]], args.duration)
        print(f"{REPEAT_RUNS} runs of {REPEAT_S:.0f} s at {REPEAT_RATE:.0f} RPS:", flush=True)
        repeated = repeats(targets)
        print(f"highest burst rate ({args.search_duration:.0f} s runs):", flush=True)
        burst = search_burst(targets, args.search_duration)
        print(f"highest sustained rate (< 1 % errors, p99 < 1 s, held {args.hold:.0f} s):")
        sustained = hold_sustained(targets, burst, args.hold)
        print(f"goodput at {GOODPUT_FACTOR:.0f}x the sustained rate (held {args.hold:.0f} s):")
        overload = goodput(targets, sustained, args.hold)
    after = os.getloadavg()
    path = write_result(
        "gateway_overhead",
        {
            "what": "chat completions on one fixed-answer upstream: direct, hybridinfer, LiteLLM",
            "litellm_version": litellm_version,
            "upstream": "bench/upstream.py (asyncio protocol, fixed completion)",
            "generator": "bench/loadgen.py: open loop, latency from the scheduled send time",
            "fixed_rates": rows,
            "added_ms": added(rows),
            "repeats": {"rate": REPEAT_RATE, "seconds": REPEAT_S, "runs": repeated},
            "burst": burst,
            "sustained": sustained,
            "goodput": overload,
            "hold_s": args.hold,
            "hold_warmup_s": HOLD_WARMUP_S,
            "workers": args.workers,
            "load_average": {"before": load_before, "after": after},
        },
    )
    print(
        f"load average (1, 5, 15 min) before {load_before}, after {after}; cores {os.cpu_count()}"
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
