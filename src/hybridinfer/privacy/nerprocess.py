"""The name finder in a process of its own, so the model runs beside the event loop, not on it.

Reading a new text costs the NER model ~1-4 ms of CPU. On a thread of the gateway's process
that CPU holds the interpreter's lock the event loop needs, so new prompts capped the gateway
near 150 a second on 2 cores. Here the model runs in a child process (``python -m
hybridinfer.privacy.nerprocess``), on whichever core the loop leaves, and the gateway's process
pays only the hop: the texts pickled out on a pipe, the findings pickled back.

The caller's thread talks to the child itself, one call at a time under a lock, over two plain
pipes (``multiprocessing.connection.Connection`` frames and pickles). A ``ProcessPoolExecutor``
would add its queue's feeder thread and its manager thread to every call, three more thread
wake-ups in the gateway's process, and ``multiprocessing``'s spawn start a resource-tracker
process beside the child.

The child is the gateway's: it ignores SIGINT (the gateway stops it), exits when the gateway
dies (its end of the pipe reads end-of-file, so a SIGKILLed gateway leaves no child behind),
and is replaced when it dies: the call of the moment fails with ``NamesUnavailable`` (the
privacy gate then fails closed) and the new child loads the model at once (seconds), the calls
after waiting behind the load within their own time bounds. The gateway's process never
imports the model.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from hybridinfer.errors import NamesUnavailable
from hybridinfer.privacy.findings import Finding
from hybridinfer.privacy.ner import NameFinder

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0
"""How long ``close`` waits for the child to end after SIGTERM."""


class ProcessNameFinder:
    """``NameFinder``'s reads, done in a child process; thread-safe, blocking like it."""

    available = staticmethod(NameFinder.available)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """Held for a whole call: the child reads one call at a time."""
        self._child: subprocess.Popen[bytes] | None = None
        self._pipes: tuple[Connection, Connection] | None = None
        """To the child, from the child."""
        self._closed = False
        self.starts = 0
        """Children started (1 once running; each replacement after a death adds one)."""

    def load(self) -> None:
        """Start the child if none runs; returns once its model is loaded (seconds)."""
        self._call("load")

    def find(self, text: str) -> list[Finding]:
        found: list[Finding] = self._call("find", text)
        return found

    def find_many(self, texts: list[str]) -> list[list[Finding]]:
        found: list[list[Finding]] = self._call("find_many", texts)
        return found

    def pid(self) -> int:
        """The child's process id (starting one if none runs)."""
        pid: int = self._call("pid")
        return pid

    def close(self) -> None:
        """Stop the child (a call under way fails); calls after this raise."""
        self._closed = True
        child = self._child
        if child is not None and child.poll() is None:
            child.terminate()  # the blocked call, if any, reads end-of-file and raises
            try:
                child.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()

    def _call(self, operation: str, *args: Any) -> Any:
        with self._lock:
            to_child, from_child = self._running()
            try:
                to_child.send((operation, args))
                done, result = from_child.recv()
            except (EOFError, OSError):
                self._replace()
                raise NamesUnavailable(
                    "the process reading names stopped; another one is starting"
                ) from None
        if not done:
            raise NamesUnavailable(f"reading names failed: {result}")
        return result

    def _running(self) -> tuple[Connection, Connection]:
        """The pipes to a live child, starting one if none runs (under the lock)."""
        if self._closed:
            raise NamesUnavailable("the name finder is closed")
        if self._pipes is None:
            calls_read, calls_write = os.pipe()
            answers_read, answers_write = os.pipe()
            command = [sys.executable, "-m", __name__, str(calls_read), str(answers_write)]
            self._child = subprocess.Popen(command, pass_fds=(calls_read, answers_write))
            # Only the child holds its ends: its death reads as end-of-file here, ours there.
            os.close(calls_read)
            os.close(answers_write)
            self._pipes = (
                Connection(calls_write, readable=False),
                Connection(answers_read, writable=False),
            )
            self.starts += 1
        return self._pipes

    def _replace(self) -> None:
        """Forget a dead child and start another at once, so it loads while nothing waits
        (under the lock)."""
        if self._pipes is not None:
            for pipe in self._pipes:
                pipe.close()
        if self._child is not None:
            self._child.kill()  # its pipe closed: dead or dying; reap it either way
            self._child.wait()
        self._child, self._pipes = None, None
        if not self._closed:
            log.warning("the process reading names died; starting another")
            self._running()


def _serve(calls: Connection, answers: Connection) -> None:
    """The child: load the model, then answer calls until the gateway's end closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    finder = NameFinder()
    operations: dict[str, Callable[..., Any]] = {
        "load": finder.load,
        "find": finder.find,
        "find_many": finder.find_many,
        "pid": os.getpid,
    }
    broken: str | None = None
    try:
        finder.load()
    except Exception as exc:  # answered to every call: the gateway fails closed
        broken = f"{type(exc).__name__}: {exc}"
    while True:
        try:
            operation, args = calls.recv()
        except EOFError:  # the gateway is gone
            return
        if broken is not None:
            answers.send((False, broken))
            continue
        try:
            answers.send((True, operations[operation](*args)))
        except Exception as exc:  # the model's own error, to this call only
            answers.send((False, f"{type(exc).__name__}: {exc}"))


if __name__ == "__main__":
    _serve(
        Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False)
    )
