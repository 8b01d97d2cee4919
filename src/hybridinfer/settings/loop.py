"""The event-loop lag probe (``observe/looplag.py``), off unless asked for.

A mixin of :class:`~hybridinfer.settings.gateway.Settings`, apart only to keep each module
small; the fields keep their flat ``HYBRIDINFER_*`` names.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class LoopSettings(BaseSettings):
    """How often the loop's lag is probed, and what counts as a stall."""

    loop_lag_interval_ms: float = Field(
        0.0,
        ge=0.0,
        le=10_000.0,
        description="Period of the event-loop lag probe (0: off; the probe is a periodic "
        "wake-up itself, so an idle gateway runs without it).",
    )
    loop_stall_ms: float = Field(
        50.0,
        gt=0.0,
        description="A probe this late, or a garbage collection this long, is logged as a stall.",
    )
