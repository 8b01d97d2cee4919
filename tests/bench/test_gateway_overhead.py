"""The overhead bench's gateway: it logs as a default one does, and its ``--workers`` target
waits until every worker has answered."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from bench.gateway_overhead import KEY, Target, hybridinfer_gateway, load, wait_for_workers
from bench.harness import free_port
from bench.processes import upstream_process


@contextmanager
def answering(workers: list[str]) -> Iterator[str]:
    """A local server whose /readyz names the workers in turn; yields its URL."""
    turn = itertools.cycle(workers)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("x-hybridinfer-worker", next(turn))
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_it_returns_once_both_workers_answered() -> None:
    with answering(["0", "0", "1"]) as url:
        wait_for_workers(url, 2, timeout_s=10)


def test_it_gives_up_when_a_worker_never_answers() -> None:
    with (
        answering(["0"]) as url,
        pytest.raises(RuntimeError, match=r"only workers \['0'\] of 2"),
    ):
        wait_for_workers(url, 2, timeout_s=0.5)


@pytest.mark.integration
def test_the_benched_gateway_writes_an_access_line_per_request(tmp_path: Path) -> None:
    """Its figures include what a default gateway pays for its access log."""
    with (
        upstream_process(free_port()) as upstream,
        hybridinfer_gateway(tmp_path, upstream) as url,
    ):
        target = Target("hybridinfer", url, [f"Authorization: Bearer {KEY}"])
        result = load(target, rate=20, duration_s=0.5, timeout_s=5.0, warmup_s=0.0)
    assert result["ok"] == 10
    lines = (tmp_path / "hybridinfer-1.log").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    answered = [
        r for r in records if r["logger"] == "hybridinfer.access" and r.get("status") == 200
    ]
    assert len(answered) == 10
    assert all(r["message"] == "POST /v1/chat/completions 200" for r in answered)
