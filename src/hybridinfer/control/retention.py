"""The opt-in retained prompt sample, wired: the scorer offers prompts, the trace sink writes
them (``store/retained.py``), and a gateway started with ``retained_prompts`` off deletes
what the table holds, so turning it off keeps nothing."""

from __future__ import annotations

from sqlalchemy import delete

from hybridinfer.route.difficulty import DifficultyScorer
from hybridinfer.settings import Settings
from hybridinfer.store import tables
from hybridinfer.store.retained import RetainedPrompts
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink


def retained_sample(
    settings: Settings, traces: TraceSink, scorer: DifficultyScorer | None
) -> RetainedPrompts | None:
    """The sample the scorer offers to and the sink writes; None when off (or no scorer)."""
    if not settings.retained_prompts or scorer is None:
        return None
    sample = RetainedPrompts(
        settings.retained_prompts_rate,
        settings.retained_prompts_max,
        settings.retained_prompts_ttl_s,
        keep_sensitive=settings.retained_prompts_sensitive,
    )
    traces.retained = scorer.retained = sample
    return sample


async def forget_unless_kept(store: SqlStore, sample: RetainedPrompts | None) -> None:
    """Off: every retained prompt is deleted (none is kept once an operator turns it off)."""
    if sample is None:
        async with store.transaction() as connection:
            await connection.execute(delete(tables.retained_prompts))
