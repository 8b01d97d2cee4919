from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.models.batcher import MicroBatcher
from hybridinfer.models.inline import InlineRuns


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


async def test_a_request_alone_is_not_held_for_company_that_is_not_coming() -> None:
    model = Doubler()
    with ThreadPoolExecutor(1) as pool:
        batcher = MicroBatcher(model, pool, max_wait_s=2.0, workers=1)
        for value in (1.0, 2.0):  # one at a time, far apart: neither waits the 2 s
            async with asyncio.timeout(1.0):
                result = await batcher.infer({"x": np.full((1, 1), value, np.float32)})
            assert result["y"].tolist() == [[2 * value]]
        await batcher.aclose()
    assert model.calls == [1, 1]


class SlowDoubler(Doubler):
    def __call__(self, feeds: Mapping[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        time.sleep(0.03)
        return super().__call__(feeds)


async def test_requests_arriving_while_a_batch_runs_wait_for_company() -> None:
    model = SlowDoubler()
    with ThreadPoolExecutor(2) as pool:
        batcher = MicroBatcher(model, pool, max_wait_s=0.1, workers=2)

        async def arrive(index: int) -> dict[str, Any]:
            await asyncio.sleep(0.005 * index)  # 5 ms apart, while the first runs for 30 ms
            return await batcher.infer({"x": np.full((1, 1), index, np.float32)})

        results = await asyncio.gather(*(arrive(index) for index in range(6)))
        await batcher.aclose()
    assert [r["y"].tolist() for r in results] == [[[2.0 * i]] for i in range(6)]
    # the first ran at once, alone; the second worker waited beside it and took the rest
    assert model.calls == [1, 5]


class ThreadNoting(Doubler):
    """A fake model that notes which thread ran each call."""

    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__()
        self.threads: list[int] = []
        self.seconds = seconds

    def __call__(self, feeds: Mapping[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        self.threads.append(threading.get_ident())
        if self.seconds:
            time.sleep(self.seconds)
        return super().__call__(feeds)


async def test_a_quick_lone_call_runs_on_the_loop_once_its_size_was_timed() -> None:
    model = ThreadNoting()
    loop_thread = threading.get_ident()
    with ThreadPoolExecutor(1) as pool:
        batcher = MicroBatcher(model, pool, max_wait_s=0.0, inline=InlineRuns(max_s=0.05))
        small, large = np.ones((1, 2), np.float32), np.ones((1, 4), np.float32)
        for feeds in (small, small, large, large, small):
            result = await batcher.infer({"x": feeds})
            assert result["y"].tolist() == (feeds * 2).tolist()
        await batcher.aclose()
    on_loop = [thread == loop_thread for thread in model.threads]
    # the first of each size is timed on a thread; later ones no larger run where they are
    assert on_loop == [False, True, False, True, True]
    assert batcher.inline is not None
    assert batcher.inline.runs == 3
    assert (batcher.batches, batcher.batched_rows) == (5, 5)


async def test_a_slow_model_and_an_unloaded_one_never_run_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    slow = ThreadNoting(seconds=0.01)
    quick = ThreadNoting()
    with ThreadPoolExecutor(2) as pool:
        slow_batcher = MicroBatcher(slow, pool, max_wait_s=0.0, inline=InlineRuns(max_s=0.001))
        unloaded = MicroBatcher(
            quick, pool, max_wait_s=0.0, inline=InlineRuns(max_s=0.05), ready=lambda: False
        )
        for _ in range(3):
            await slow_batcher.infer({"x": np.ones((1, 1), np.float32)})
            await unloaded.infer({"x": np.ones((1, 1), np.float32)})
        await slow_batcher.aclose()
        await unloaded.aclose()
    assert loop_thread not in slow.threads
    assert loop_thread not in quick.threads


async def test_an_inline_call_that_fails_fails_alone() -> None:
    model = Doubler()
    with ThreadPoolExecutor(1) as pool:
        batcher = MicroBatcher(model, pool, max_wait_s=0.0, inline=InlineRuns(max_s=0.05))
        await batcher.infer({"x": np.ones((1, 1), np.float32)})
        with pytest.raises(InvalidInput):
            await batcher.infer({"x": -np.ones((1, 1), np.float32)})
        result = await batcher.infer({"x": np.ones((1, 1), np.float32)})
        await batcher.aclose()
    assert result["y"].tolist() == [[2.0]]
