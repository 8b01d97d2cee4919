"""Pseudonymised chat: what replacing and restoring cost.

- **Replacement**: ``redact_inputs`` (every field of a chat walked, each value replaced under
  one mapping, patterns only) on a one-message chat of 200 and 2,000 characters holding
  personal data (e-mail, phone, card, Chinese mobile), and on prose of the same length
  without any.
- **Streamed restore per chunk**: ``AnswerRestorer.piece`` on an answer cut into pieces of 3
  to 5 characters (about a token each), placeholders split across them; the goal is ≤ 50 µs
  at p50 per piece.
- **Time to first token** through a real gateway process (``hybridinfer gateway``) on
  ``bench/upstream.py`` (a fixed tiny answer, streamed): the policy's chat mode ``private``
  with a chat holding no personal data, against mode ``pseudonymise`` with the same chat
  carrying the four values. The difference is what the mode adds in front of the first token,
  and also what any chat holding personal data pays: the decompose scan that finds the
  values (the chat without any stops at its first check: no digit, no ``@``).

    python -m bench.pseudonymise [--rounds 2000] [--ttft-requests 200]

Writes bench/results/pseudonymise.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.gateway_overhead import KEY, hybridinfer_gateway
from bench.harness import free_port, percentiles, write_result
from bench.processes import upstream_process
from bench.upstream import MODEL
from hybridinfer.privacy.conversation import redact_inputs
from hybridinfer.privacy.pseudonym import Pseudonymiser
from hybridinfer.privacy.restore import AnswerRestorer

SEED = 20
VALUES = ("jane.doe@example.org", "+44 161 496 0123", "4539 1488 0343 6467", "+86 138 1234 5678")
PROSE = (
    "The meeting moved to Thursday afternoon and should take about an hour. Please bring the "
    "notes from last week so we can agree on the next steps. Lunch will be served after it. "
)
POLICIES = {
    "private": "version: ttft-private\nprivacy: {names: false}\n",
    "pseudonymise": (
        "version: ttft-pseudonymise\nprivacy: {names: false}\n"
        "privacy_modes:\n  capabilities: {chat: pseudonymise}\n"
    ),
}


def text_of(size: int, personal: bool) -> str:
    """Prose of ``size`` characters, with the four values spread in it when ``personal``
    (four of them per 500 characters)."""
    filler = PROSE * (size // len(PROSE) + 2)
    if not personal:
        return filler[:size]
    values = [f" {value} " for value in VALUES * max(1, size // 500)]
    step = (size - sum(map(len, values))) // (len(values) + 1)
    parts = []
    for number, value in enumerate(values):
        parts += [filler[number * step : (number + 1) * step], value]
    text = "".join(parts)
    return text + filler[: size - len(text)]


def replacement(rounds: int) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for size in (200, 2000):
        for personal in (True, False):
            text = text_of(size, personal)
            inputs = {"messages": [{"role": "user", "content": text}], "max_tokens": 64}
            samples = []
            for _ in range(rounds):
                started = time.perf_counter()
                redact_inputs(Pseudonymiser(), inputs)
                samples.append((time.perf_counter() - started) * 1000.0)
            mapping = Pseudonymiser()
            redact_inputs(mapping, inputs)
            name = f"{size}_chars_{'personal' if personal else 'no_personal_data'}"
            rows[name] = {"ms": percentiles(samples), "replaced": mapping.describe()}
            print(
                f"replace {name}: p50 {rows[name]['ms']['p50']:.3f} ms, "
                f"p99 {rows[name]['ms']['p99']:.3f} ms, {mapping.describe()}"
            )
    return rows


def answer_pieces(mapping: Pseudonymiser, rng: random.Random) -> list[dict[str, Any]]:
    """A 1,000-character answer quoting each placeholder, cut into 3-5 character pieces."""
    sent = redact_inputs(mapping, {"t": " ".join(VALUES)})["t"]
    answer = (f"Sure. I will write to you about it, {sent}. " * 20)[:1000]
    pieces, position = [], 0
    while position < len(answer):
        size = rng.randint(3, 5)
        pieces.append(
            {
                "delta": {"content": answer[position : position + size]},
                "finish_reason": None,
                "usage": None,
            }
        )
        position += size
    pieces.append({"delta": {}, "finish_reason": "stop", "usage": None})
    return pieces


def streamed_restore(rounds: int) -> dict[str, Any]:
    rng = random.Random(SEED)
    samples: list[float] = []
    restored = 0
    for _ in range(max(1, rounds // 20)):
        mapping = Pseudonymiser()
        pieces = answer_pieces(mapping, rng)
        answer = AnswerRestorer(mapping)
        for piece in pieces:
            started = time.perf_counter_ns()
            answer.piece(piece)
            samples.append((time.perf_counter_ns() - started) / 1000.0)
        restored += mapping.restored
    figures = percentiles(samples)
    print(
        f"restore per piece: p50 {figures['p50']:.2f} µs, p99 {figures['p99']:.2f} µs "
        f"({figures['n']} pieces, {restored} placeholders restored); goal p50 <= 50 µs"
    )
    return {
        "us_per_piece": figures,
        "placeholders_restored": restored,
        "goal_p50_us": 50.0,
        "meets_goal": figures["p50"] <= 50.0,
    }


def first_token_ms(client: httpx.Client, content: str) -> float:
    body = {
        "model": "auto",
        "messages": [{"role": "user", "content": content}],
        "stream": True,
        "max_tokens": 8,
        "hybridinfer": {"route": "cloud"},
    }
    started = time.perf_counter()
    with client.stream("POST", "/v1/chat/completions", json=body) as answer:
        if answer.status_code != 200:
            raise RuntimeError(f"chat failed: {answer.status_code} {answer.read()!r}")
        lines = answer.iter_lines()
        for line in lines:
            if line.startswith("data: {") and '"content"' in line:
                elapsed = (time.perf_counter() - started) * 1000.0
                for _ in lines:  # read the rest: the next request reuses the connection
                    pass
                return elapsed
    raise RuntimeError("the stream carried no token")


def time_to_first_token(requests: int) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory() as work,
        upstream_process(free_port()) as upstream,
        hybridinfer_gateway(Path(work), upstream) as url,
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30
        ) as client,
    ):
        for mode, personal in (("private", False), ("pseudonymise", True)):
            applied = client.post("/v1/policies", json={"policy": POLICIES[mode]})
            if applied.status_code != 201:
                raise RuntimeError(f"policy {mode}: {applied.text}")
            content = text_of(200, personal)
            for _ in range(20):  # warm up: connections, the policy's compiled detector
                first_token_ms(client, content)
            samples = [first_token_ms(client, content) for _ in range(requests)]
            rows[mode] = {"ms": percentiles(samples), "personal_data": personal}
            print(
                f"TTFT mode {mode}: p50 {rows[mode]['ms']['p50']:.2f} ms, "
                f"p99 {rows[mode]['ms']['p99']:.2f} ms"
            )
    rows["added_p50_ms"] = round(
        rows["pseudonymise"]["ms"]["p50"] - rows["private"]["ms"]["p50"], 3
    )
    rows["upstream"] = f"bench/upstream.py ({MODEL}: a fixed tiny streamed answer)"
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--ttft-requests", type=int, default=200)
    args = parser.parse_args()
    load_before = os.getloadavg()
    payload: dict[str, Any] = {
        "replacement": replacement(args.rounds),
        "streamed_restore": streamed_restore(args.rounds),
        "time_to_first_token": time_to_first_token(args.ttft_requests),
        "load_average": {
            "before": [round(v, 2) for v in load_before],
            "after": [round(v, 2) for v in os.getloadavg()],
        },
        "note": "2 cores shared with other work; load average (1, 5, 15 min) before and after",
    }
    path = write_result("pseudonymise", payload)
    print(
        f"load average before {payload['load_average']['before']}, "
        f"after {payload['load_average']['after']}; wrote {path}"
    )
    print(json.dumps(payload["time_to_first_token"], indent=2))


if __name__ == "__main__":
    main()
