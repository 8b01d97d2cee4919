"""A server process's heap: frozen once started, its young generation collected less often,
and the frozen count kept for ``/metrics`` without walking the heap again."""

from __future__ import annotations

import gc

from hybridinfer.core.heap import FROZEN, YOUNG_COLLECTION_THRESHOLD, freeze_startup_heap


def test_a_server_freezes_its_start_up_heap_and_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    gc.unfreeze()
    # Python's default young threshold, as a process starts with: another test in this process
    # may have served a gateway, which raised it.
    gc.set_threshold(700, *before[1:])
    try:
        freeze_startup_heap()
        frozen_now = gc.get_freeze_count()
        assert frozen_now > 1000  # this process's modules, at least
        # Read at the freeze. A frozen object still leaves when it is freed (a thread another
        # test left running may drop one at any time); none joins: the count may only shrink.
        assert frozen_now <= FROZEN.objects <= frozen_now * 1.01
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *before[1:])
        assert YOUNG_COLLECTION_THRESHOLD > 700
        freeze_startup_heap(5000)
        assert gc.get_threshold()[0] == 5000
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        FROZEN.objects = 0
