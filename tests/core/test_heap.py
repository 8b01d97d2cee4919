"""A server process's heap: frozen once started, its young generation collected less often,
and the frozen count kept for ``/metrics`` without walking the heap again."""

from __future__ import annotations

import gc

from hybridinfer.core.heap import FROZEN, YOUNG_COLLECTION_THRESHOLD, freeze_startup_heap


def test_a_server_freezes_its_start_up_heap_and_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    gc.unfreeze()
    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() > 1000  # this process's modules, at least
        assert FROZEN.objects == gc.get_freeze_count()
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *before[1:])
        assert before[0] < YOUNG_COLLECTION_THRESHOLD
        freeze_startup_heap(5000)
        assert gc.get_threshold()[0] == 5000
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        FROZEN.objects = 0
