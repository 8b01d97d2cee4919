"""The open-loop load generator against a real upstream process, and its parsing pieces."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from bench.gateway_overhead import RateSearch, Target, hold_sustained, load
from bench.harness import free_port
from bench.loadgen import OpenLoop, quantiles, response_length, unique_word
from bench.processes import upstream_process

from bench import gateway_overhead


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with upstream_process(free_port()) as url:
        yield url


@pytest.mark.integration
def test_it_keeps_its_schedule_against_a_real_upstream(upstream: str) -> None:
    result = load(Target("direct", upstream), rate=200, duration_s=1.5, timeout_s=2.0)
    assert result["requests"] == 300
    assert result["ok"] == 300
    assert result["errors"] == 0
    assert result["latency_ms"]["p50"] < 50
    assert 0 < result["generator_cpu"] < 1.5
    assert result["pacer_lag_ms"]["p50"] < 20


@pytest.mark.integration
def test_a_port_nobody_listens_on_is_all_errors() -> None:
    result = load(Target("nobody", f"http://127.0.0.1:{free_port()}"), 50, 1.0, timeout_s=1.0)
    assert result["ok"] == 0
    assert result["error_rate"] == 1.0
    assert all(kind.startswith("connect") for kind in result["error_kinds"])


def test_response_length_handles_content_length_and_chunks() -> None:
    plain = bytearray(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    assert response_length(plain, plain.find(b"\r\n\r\n"), bytes(plain[:15])) is not None
    partial = bytearray(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok")
    head = bytes(partial[: partial.find(b"\r\n\r\n")])
    assert response_length(partial, partial.find(b"\r\n\r\n"), head) is None
    chunked = bytearray(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nX"
    )
    head = bytes(chunked[: chunked.find(b"\r\n\r\n")])
    assert response_length(chunked, chunked.find(b"\r\n\r\n"), head) == len(chunked) - 1


def test_quantiles_are_nearest_rank() -> None:
    found = quantiles([float(value) for value in range(1, 101)])
    assert (found["p50"], found["p99"], found["max"], found["n"]) == (50.0, 99.0, 100.0, 100)
    # Unsorted input, and sizes where q·n is not a whole number: ceil(q·n)-th smallest.
    found = quantiles([3.0, 1.0, 2.0])
    assert (found["p50"], found["p90"], found["p99"]) == (2.0, 3.0, 3.0)
    found = quantiles([float(value) for value in range(1, 1001)])
    assert (found["p99"], found["p999"]) == (990.0, 999.0)
    assert quantiles([7.0])["p50"] == 7.0
    assert quantiles([]) == {}


def test_the_rate_search_doubles_then_bisects() -> None:
    search = RateSearch(start=10, ceiling=10_000, refinements=2)
    capacity = 100.0
    tried = []
    while (rate := search.next_rate()) is not None:
        tried.append(rate)
        p99 = 5.0 if rate <= capacity else 5000.0
        result = {"latency_ms": {"p50": 1.0, "p99": p99}, "error_rate": 0.0}
        search.record(rate, {**result, "error_kinds": {}, "generator_cpu": 0.1})
    assert tried == [10, 20, 40, 80, 160, 120.0, 100.0]
    assert search.passed == 100.0
    assert search.failed == 120.0


def test_a_sustained_rate_is_one_held_for_the_whole_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Holds start at the burst rate, step down, then bisect; only a held rate counts as
    sustained."""
    capacity = 105.0
    runs: list[tuple[float, float, float]] = []

    def fake_load(
        target: Target, rate: float, duration_s: float, timeout_s: float, warmup_s: float = 1.0
    ) -> dict[str, Any]:
        runs.append((rate, duration_s, warmup_s))
        p99 = 5.0 if rate <= capacity else 5000.0
        return {
            "latency_ms": {"p50": 1.0, "p99": p99},
            "error_rate": 0.0,
            "error_kinds": {},
            "generator_cpu": 0.1,
        }

    monkeypatch.setattr(gateway_overhead, "load", fake_load)
    monkeypatch.setattr(gateway_overhead, "settle", lambda target: None)
    targets = [Target("gateway", "http://127.0.0.1:1")]
    held = hold_sustained(targets, {"gateway": {"burst_rps": 150.0}}, hold_s=30.0)
    # Down by a fifth until a hold passes (96), then halving the gap to the lowest failure
    # (120 -> 108 failed -> 102 held), five holds in all.
    assert [rate for rate, _, _ in runs] == [150.0, 120.0, 96.0, 108.0, 102.0]
    assert all(duration == 30.0 and warmup >= 5.0 for _, duration, warmup in runs)
    assert held["gateway"]["sustained_rps"] == 102.0
    assert held["gateway"]["first_failed_rps"] == 108.0
    assert [step["sustained"] for step in held["gateway"]["steps"]] == [
        False,
        False,
        True,
        False,
        True,
    ]
    runs.clear()
    # Held at the burst rate: the burst search's first failure (104) is tried, not taken as
    # failed; held, then a quarter higher (130, failed), then bisected (117, 110: failed).
    once = hold_sustained(
        targets, {"gateway": {"burst_rps": 100.0, "first_failed_rps": 104.0}}, hold_s=30.0
    )
    assert [rate for rate, _, _ in runs] == [100.0, 104.0, 130.0, 117.0, 110.0]
    assert once["gateway"]["sustained_rps"] == 104.0
    assert once["gateway"]["first_failed_rps"] == 110.0
    runs.clear()
    # Held at the burst rate with the burst's failure a fifth above: that failure held 30 s
    # fails too (120), and the gap is bisected (100 held, 110 within a tenth of it: failed).
    up = hold_sustained(
        targets, {"gateway": {"burst_rps": 80.0, "first_failed_rps": 120.0}}, hold_s=30.0
    )
    assert [rate for rate, _, _ in runs] == [80.0, 120.0, 100.0, 110.0]
    assert up["gateway"]["sustained_rps"] == 100.0
    runs.clear()
    # A burst search that failed nothing stopped at its ceiling: one hold there, none above.
    ceiling = hold_sustained(targets, {"gateway": {"burst_rps": 90.0}}, hold_s=30.0)
    assert [rate for rate, _, _ in runs] == [90.0]
    assert ceiling["gateway"]["sustained_rps"] == 90.0
    never = hold_sustained(targets, {"gateway": {"burst_rps": 400.0}}, hold_s=30.0)
    assert never["gateway"]["sustained_rps"] == 0.0  # five failed holds: nothing is claimed


def test_a_varied_body_is_unique_per_request_and_keeps_its_length() -> None:
    assert unique_word(0, 4) == b"aaaa"
    assert unique_word(27, 4) == b"aabb"
    words = {unique_word(index, 5) for index in range(5000)}
    assert len(words) == 5000
    assert all(word.isalpha() and len(word) == 5 for word in words)
    assert unique_word(26**4 + 27, 4) == b"aabb"  # past the last word it wraps


async def test_two_runs_do_not_send_the_same_words() -> None:
    """Each generator starts its words at a random index, so a second run's bodies are not
    the first's (the gateway's remembered readings would serve them)."""
    runs = [
        OpenLoop("http://127.0.0.1:1/x", b'{"a": "XXXXXXXX"}', [], 1, 1.0, b"XXXXXXXX")
        for _ in range(2)
    ]
    first, second = ({run.payload_of(index) for index in range(1000)} for run in runs)
    assert len(first) == len(second) == 1000
    assert not first & second
    pinned = OpenLoop("http://127.0.0.1:1/x", b'"XX"', [], 1, 1.0, b"XX", vary_start=0)
    assert pinned.payload_of(27).endswith(b'"bb"')


@pytest.mark.integration
def test_varied_bodies_reach_a_real_upstream_whole(upstream: str) -> None:
    command = [sys.executable, "-m", "bench.loadgen", "--url", f"{upstream}/v1/chat/completions"]
    body = '{"model": "m", "messages": [{"role": "user", "content": "Say ok, XXXXXX."}]}'
    command += ["--rate", "100", "--duration", "1", "--warmup", "0", "--body", body]
    finished = subprocess.run([*command, "--vary", "XXXXXX"], capture_output=True, check=True)
    result = json.loads(finished.stdout)
    assert (result["requests"], result["ok"], result["errors"]) == (100, 100, 0)


async def test_refusals_are_told_apart_by_their_retry_after() -> None:
    """Every other answer a 503, half of those without ``Retry-After``: each kind counted."""
    answers = 0

    class Refusing(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.WriteTransport)
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            nonlocal answers
            answers += 1
            kinds = {1: b"200 OK", 2: b"503 Busy\r\nRetry-After: 1", 3: b"200 OK", 0: b"503 Busy"}
            head = b"HTTP/1.1 " + kinds[answers % 4]
            self.transport.write(head + b"\r\nContent-Length: 2\r\n\r\nok")

    server = await asyncio.get_running_loop().create_server(Refusing, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        generator = OpenLoop(f"http://127.0.0.1:{port}/", b"{}", [], 1, timeout_s=2.0)
        result = await generator.run(rate=200, duration_s=0.4, warmup_s=0.0)
    assert result["requests"] == 80
    assert result["ok"] == 40
    assert result["error_kinds"] == {"HTTP 503": 20, "HTTP 503 without Retry-After": 20}
