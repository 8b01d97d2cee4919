"""The instruction count is exact and charged to the right layer: the same work counts the
same every time, twice the work twice as much, and a standard-library frame's instructions go
to the layer that called it."""

from __future__ import annotations

import sys
from typing import Any

from bench.harness import REPO
from bench.pathwork import BENCH, InstructionCounter, layer_of_file, layer_of_frame


def loop(times: int) -> int:
    total = 0
    for index in range(times):
        total += index
    return total


def counted(work: int) -> InstructionCounter:
    with InstructionCounter() as counter:
        loop(work)
    return counter


def test_the_same_work_counts_the_same_and_more_work_counts_more() -> None:
    first, again, double = counted(100), counted(100), counted(200)
    assert first.instructions == again.instructions
    # This file is in no layer; the bench's own share is the counter switching itself off.
    assert first.instructions[BENCH] == double.instructions[BENCH] < 10
    per_100 = double.instructions["other"] - first.instructions["other"]
    per_10 = counted(20).instructions["other"] - counted(10).instructions["other"]
    assert per_100 == 10 * per_10 > 0


def test_files_are_charged_to_their_layer() -> None:
    assert layer_of_file("/x/src/hybridinfer/execute/executor.py") == "execute"
    assert layer_of_file("/x/src/hybridinfer/route/router.py") == "route"
    assert layer_of_file("/x/lib/python3.11/asyncio/events.py") == "asyncio event loop"
    assert layer_of_file(str(REPO / "bench" / "shed_cost.py")) == BENCH
    assert layer_of_file(str(REPO / "tests" / "bench" / "test_pathwork.py")) is None
    assert layer_of_file("/x/lib/python3.11/logging/__init__.py") is None


def test_a_frame_of_no_layer_is_charged_to_its_nearest_caller_with_one() -> None:
    namespace: dict[str, Any] = {"sys": sys}
    library = "def inner():\n    return sys._getframe()\n"
    exec(compile(library, "/x/lib/python3.11/logging/made_up.py", "exec"), namespace)
    caller = "def outer():\n    return inner()\n"
    exec(compile(caller, "/x/src/hybridinfer/execute/made_up.py", "exec"), namespace)
    frame = namespace["outer"]()
    assert frame.f_code.co_filename.endswith("logging/made_up.py")
    assert layer_of_frame(frame) == "execute"
    assert layer_of_frame(None) == "other"
