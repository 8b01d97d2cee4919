"""The LRU of onnxruntime sessions: bounded by model file sizes, the most recent always kept,
and one load per file however many threads ask at once."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from hybridinfer.models.sessioncache import SessionCache


@pytest.fixture
def model_files(models_dir: Path, tmp_path: Path) -> list[Path]:
    """Three copies of the smallest bundled model, each its own session."""
    source = models_dir / "digits-small" / "1" / "model.onnx"
    copies = []
    for name in ("a", "b", "c"):
        copies.append(tmp_path / f"{name}.onnx")
        shutil.copyfile(source, copies[-1])
    return copies


def test_the_least_recently_used_session_goes_first(model_files: list[Path]) -> None:
    a, b, c = model_files
    size = a.stat().st_size
    cache = SessionCache(capacity_bytes=2 * size)

    first = cache.get(a)
    cache.get(b)
    assert cache.get(a) is first  # a hit, and a is now the most recent
    cache.get(c)

    assert cache.loaded() == [a, c]
    assert (cache.loads, cache.evictions) == (3, 1)
    assert cache.loaded_bytes == 2 * size
    assert cache.get(b) is not None
    assert cache.loads == 4


def test_the_most_recent_session_stays_even_over_the_capacity(model_files: list[Path]) -> None:
    a, b, _ = model_files
    cache = SessionCache(capacity_bytes=1)
    cache.get(a)
    cache.get(b)
    assert cache.loaded() == [b]


def test_concurrent_callers_share_one_load(model_files: list[Path]) -> None:
    cache = SessionCache(capacity_bytes=10**9)
    start = threading.Barrier(8)
    sessions: list[object] = []

    def load() -> None:
        start.wait()
        sessions.append(cache.get(model_files[0]))

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert cache.loads == 1
    assert len({id(session) for session in sessions}) == 1


def test_a_discarded_session_is_loaded_again(model_files: list[Path]) -> None:
    a = model_files[0]
    cache = SessionCache(capacity_bytes=10**9)
    first = cache.get(a)
    cache.discard(a)
    assert cache.loaded() == []
    assert cache.get(a) is not first
    assert cache.loads == 2
