"""How many gateway processes share the port: ``hybridinfer gateway --workers N``.

A mixin of :class:`~hybridinfer.settings.gateway.Settings`, apart only to keep each module
small; the fields keep their flat ``HYBRIDINFER_*`` names.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class WorkerSettings(BaseSettings):
    """The number of worker processes, and which one this process is."""

    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Gateway processes on the one port (each a full gateway; more than 1 "
        "needs cache: redis and a shared store, as replicas do).",
    )
    worker_index: int | None = Field(
        None,
        ge=0,
        description="Set by the parent of `--workers N` for each worker it starts (0..N-1); "
        "not for hand use.",
    )
