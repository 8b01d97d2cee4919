"""A server process's heap and its cyclic garbage collector: the start-up heap frozen out of
the collector's reach, the youngest generation collected less often, and how many objects the
freeze holds (``/metrics`` reports it)."""

from __future__ import annotations

import gc
from dataclasses import dataclass


@dataclass(slots=True)
class FrozenHeap:
    """What the last ``freeze_startup_heap`` put out of the collector's reach. The freeze is
    the interpreter's own process-wide state; this is its count, read once when it changes."""

    objects: int = 0


FROZEN = FrozenHeap()
"""The process's frozen heap (0 objects until a server freezes it)."""


YOUNG_COLLECTION_THRESHOLD = 10_000
"""Container objects made (less those freed) between two collections of the youngest
generation (a node's; the gateway's is its setting ``gc_young_threshold``); Python's default
is 700."""


def freeze_startup_heap(young_threshold: int = YOUNG_COLLECTION_THRESHOLD) -> None:
    """Put every object alive once a server has started (modules, models, the app) out of the
    cyclic garbage collector's reach, and collect the young generation less often.

    A full collection in a started gateway walks about 130,000 such objects, 75 ms on this
    machine, a pause that lands on every request in flight; after the freeze only objects made
    since are walked. Start-up objects are not garbage, so nothing is lost by not walking them.

    At Python's default threshold (700) the requests in flight alone hold enough new objects
    to cross it again and again: at 700 pinned chats a second, 166-397 young collections, 15-36
    middle ones and 1-3 full ones every 15 s, 10-34 µs of collector time a request (a full one
    10-25 ms, a stall of the loop). At ``YOUNG_COLLECTION_THRESHOLD``, 4-6 young collections
    and none older in the same runs, 1-4 µs a request (three runs each way, alternating, on 2
    cores). The garbage a request leaves in cycles waits a little longer to be freed: a few
    thousand objects at most. ``bench/loop_stalls.py`` runs a gateway at each threshold side by
    side.

    The count of frozen objects is read here, once, into ``FROZEN``: ``gc.get_freeze_count``
    walks every frozen object (about 14 ms for a gateway's heap), too long for each scrape of
    ``/metrics`` on the event loop.

    For server processes only (``hybridinfer gateway``, ``up``, ``node``), not for a gateway
    embedded in another program, whose heap is not ours to freeze.
    """
    gc.collect()
    gc.freeze()
    FROZEN.objects = gc.get_freeze_count()
    gc.set_threshold(young_threshold, *gc.get_threshold()[1:])
