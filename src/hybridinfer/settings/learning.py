"""How often the online learner meets the shared log (the policy says what it may do).

A mixin of :class:`~hybridinfer.settings.gateway.Settings`; the fields keep their flat
``HYBRIDINFER_*`` names.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class LearningSettings(BaseSettings):
    """The learner's sync with the store."""

    learner_sync_interval_s: float = Field(
        1.0,
        gt=0.0,
        le=60.0,
        description="How often this replica writes its outcomes to the store and applies the "
        "outcomes that fell due (every replica's learner follows the same log).",
    )
