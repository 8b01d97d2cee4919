"""A staged router's verdicts on the retained prompt sample, for what-if replay.

The trace keeps the difficulty verdict the live router gave, never the prompt, so replay
reuses it; a staged *router* (another threshold or ``target_cloud_share`` in the policy's
``router`` section, other ``weights``, another artifact) needs the prompt read again. Here
each retained prompt (``store/retained.py``) is scored by a scorer of replay's own under the
staged settings, and held against the staged threshold. Every prompt is scored before any
threshold is read, so a ``calibration: live`` target share is calibrated on the sample itself,
as the live router calibrates on its recent prompts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hybridinfer.core.decision import Verdict
from hybridinfer.errors import ConfigError, InvalidInput
from hybridinfer.policy.document import CompiledPolicy
from hybridinfer.route.difficulty import Difficulty, DifficultyScorer
from hybridinfer.route.learned import LearnedRouter
from hybridinfer.store.retained import RetainedPrompt

Key = tuple[str, str]
"""(request id, subtask id)."""


@dataclass(frozen=True, slots=True)
class Rescored:
    """A retained prompt's difficulty under the staged router (None: it does not read it)."""

    difficulty: float | None
    verdict: Verdict | None


def replay_scorer(live: DifficultyScorer, artifact: str | None) -> DifficultyScorer:
    """A scorer for replay: the live heads, the chat difficulty head replaced by ``artifact``
    (a router artifact path on the gateway) when given."""
    if artifact is None:
        return live.with_heads({})
    try:
        head = LearnedRouter.load(Path(artifact))
    except ConfigError as error:
        raise InvalidInput(str(error)) from None
    return live.with_heads({"complexity": head})


async def rescore(
    scorer: DifficultyScorer, policy: CompiledPolicy, prompts: Mapping[Key, RetainedPrompt]
) -> dict[Key, Rescored]:
    """Every prompt's verdict under ``policy``'s router section, scored by ``scorer``."""
    settings = policy.policy.router
    scored: dict[Key, Difficulty] = {}
    found: dict[Key, Rescored] = {}
    for key, prompt in prompts.items():
        if not settings.enabled or prompt.capability not in settings.capabilities:
            found[key] = Rescored(None, None)
            continue
        try:
            scored[key] = await scorer.score(prompt.capability, prompt.text, settings, False)
        except LookupError as error:  # a weight on a signal no artifact gives
            raise InvalidInput(str(error)) from None
    for key, difficulty in scored.items():
        capability = prompts[key].capability
        knob = settings.capabilities[capability]
        threshold = scorer.threshold(capability, knob, settings)
        verdict = Verdict(
            difficulty.value,
            threshold.value,
            threshold.knob,
            threshold.calibration,
            difficulty.signals,
        )
        found[key] = Rescored(difficulty.value, verdict)
    return found
