"""How guarded canary walks are led across replicas.

A mixin of :class:`~hybridinfer.settings.gateway.Settings`, apart only to keep each module
small; the fields keep their flat ``HYBRIDINFER_*`` names. The steps, dwell and tolerances
of a walk are the policy's ``guard:`` block, not settings.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class ChangeSettings(BaseSettings):
    """The canary walk's loop and leader lease."""

    walk_tick_s: float = Field(
        0.5, gt=0.0, le=60.0, description="How often the leading replica judges walks."
    )
    walk_lease_ttl_s: float = Field(
        3.0,
        gt=0.0,
        le=600.0,
        description="Lease of the leading replica; another takes the walk over this long "
        "after the leader stops renewing it.",
    )
