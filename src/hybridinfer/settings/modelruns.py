"""Where a model call runs (``models/inline.py``), for the gateway's in-process models and a
node's alike.

A mixin of :class:`~hybridinfer.settings.gateway.Settings` and
:class:`~hybridinfer.settings.node.NodeSettings`; the field keeps its flat name under each
one's prefix (``HYBRIDINFER_INLINE_BELOW_US``, ``HYBRIDINFER_NODE_INLINE_BELOW_US``).
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class ModelRunSettings(BaseSettings):
    """Which lone model calls run on the event loop rather than a worker thread."""

    inline_below_us: int = Field(
        1000,
        ge=0,
        description=(
            "A lone model call whose input is of a size seen to run within this many µs runs "
            "on the event loop instead of a worker thread, whose hand-off costs more than such "
            "a run; at most a fifth of the loop's time goes to such runs (0: always a thread)."
        ),
    )
