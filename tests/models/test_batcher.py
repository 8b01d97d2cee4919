from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.models.batcher import MicroBatcher


class Doubler:
    """A fake model: doubles ``x``; refuses any batch holding a negative value."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, feeds: Mapping[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        x = feeds["x"]
        self.calls.append(x.shape[0])
        if (x < 0).any():
            raise InvalidInput("negative")
        return {"y": x * 2}


async def test_concurrent_requests_are_coalesced_and_split_back() -> None:
    model = Doubler()
    with ThreadPoolExecutor(1) as pool:
        batcher = MicroBatcher(model, pool, max_batch_size=64, max_wait_s=0.005, workers=1)
        rows = [np.full((1, 2), i, dtype=np.float32) for i in range(20)]
        results = await asyncio.gather(*(batcher.infer({"x": row}) for row in rows))
        await batcher.aclose()
    for i, result in enumerate(results):
        assert result["y"].tolist() == [[2 * i, 2 * i]]
    assert len(model.calls) < 20
    assert sum(model.calls) == 20


async def test_one_bad_request_fails_alone() -> None:
    model = Doubler()
    with ThreadPoolExecutor(1) as pool:
        batcher = MicroBatcher(model, pool, max_batch_size=8, max_wait_s=0.005, workers=1)
        good = [batcher.infer({"x": np.ones((1, 1), np.float32)}) for _ in range(3)]
        bad = batcher.infer({"x": -np.ones((1, 1), np.float32)})
        results = await asyncio.gather(*good, bad, return_exceptions=True)
        await batcher.aclose()
    assert [type(r) for r in results[:3]] == [dict, dict, dict]
    assert isinstance(results[3], InvalidInput)


async def test_different_shapes_are_not_mixed_and_batch_size_is_bounded() -> None:
    model = Doubler()
    with ThreadPoolExecutor(1) as pool:
        batcher = MicroBatcher(model, pool, max_batch_size=4, max_wait_s=0.005, workers=1)
        narrow = [batcher.infer({"x": np.ones((1, 1), np.float32)}) for _ in range(6)]
        wide = [batcher.infer({"x": np.ones((2, 3), np.float32)}) for _ in range(2)]
        results = await asyncio.gather(*narrow, *wide)
        await batcher.aclose()
    assert [r["y"].shape for r in results] == [(1, 1)] * 6 + [(2, 3)] * 2
    assert max(model.calls) <= 4


@pytest.mark.parametrize("wait", [0.0, 0.001])
async def test_a_lone_request_is_answered(wait: float) -> None:
    with ThreadPoolExecutor(1) as pool:
        batcher = MicroBatcher(Doubler(), pool, max_wait_s=wait)
        result = await batcher.infer({"x": np.ones((1, 1), np.float32)})
        await batcher.aclose()
    assert result["y"].tolist() == [[2.0]]
