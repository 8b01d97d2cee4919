"""The ``--workers`` target of the overhead bench waits until every worker has answered."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from bench.gateway_overhead import wait_for_workers


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
