"""The retained prompt sample: an opt-in, bounded random sample of the prompts the difficulty
scorer read, kept in the private-zone SQL store so a staged router can be replayed on them
(``store/retained.py``, ``route/rescore.py``).

A mixin of :class:`~hybridinfer.settings.gateway.Settings`, apart only to keep each module
small; the fields keep their flat ``HYBRIDINFER_*`` names. Off by default: no prompt is kept
anywhere unless an operator turns it on.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class RetainedPromptSettings(BaseSettings):
    """Whether, how many and for how long scored prompts are kept for router replay."""

    retained_prompts: bool = Field(
        False,
        description="Keep a random sample of the prompts the difficulty scorer read (text, "
        "request id, capability, second) in the store's own table, for replaying a staged "
        "router. Never in traces, exports or logs.",
    )
    retained_prompts_rate: float = Field(
        0.05, gt=0.0, le=1.0, description="The share of scored prompts kept (a random draw each)."
    )
    retained_prompts_max: int = Field(
        10_000, ge=1, le=1_000_000, description="Rows the table keeps; the oldest go first."
    )
    retained_prompts_ttl_s: float = Field(
        7 * 86_400.0, gt=0.0, description="Seconds a retained prompt is kept, then deleted."
    )
    retained_prompts_sensitive: bool = Field(
        False,
        description="Also keep prompts the privacy scan marked sensitive (default: never).",
    )
