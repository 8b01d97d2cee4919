"""The default model build: what ``hybridinfer up`` builds on first start and ``hybridinfer
models build`` builds: the four classifiers (``build.py``) and the MiniLM sentence embedder
(``minilm.py``) that local summaries, retrieval and the learned router read.

MiniLM's export needs torch (the ``build`` extra). Without it the classifiers are still built
and MiniLM is reported as skipped, with the reason and what serving then lacks: the gateway
runs without local summaries and retrieval rather than not at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybridinfer.modelzoo import minilm
from hybridinfer.modelzoo.build import MODEL_NAMES, Progress, build_models

BUNDLE_NAMES = (*MODEL_NAMES, minilm.NAME)
"""Every model of the default build, in build order."""


@dataclass(frozen=True, slots=True)
class Bundle:
    """What one default build produced: a card per built model, a reason per skipped one."""

    cards: list[dict[str, Any]]
    skipped: dict[str, str] = field(default_factory=dict)


class _Steps:
    """One progress count over both builds: the classifiers' steps, then MiniLM's."""

    def __init__(self, progress: Progress | None, extra: int) -> None:
        self._progress = progress
        self._extra = extra
        self.done = 0
        self.total = extra

    def classifiers(self, description: str, done: int, total: int) -> None:
        self.done, self.total = done, total + self._extra
        self._report(description)

    def step(self, description: str) -> None:
        if self.done == 0:
            self._report("starting")  # MiniLM alone: the bar starts at 0 as the other builds'
        self.done += 1
        self._report(description)

    def _report(self, description: str) -> None:
        if self._progress is not None:
            self._progress(description, self.done, self.total)


def build_bundle(out_dir: Path, progress: Progress | None = None, force: bool = False) -> Bundle:
    """Build (or reuse) every model of ``BUNDLE_NAMES`` into ``out_dir``.

    ``progress(step, done, total)`` counts the steps of both builds as one (never called when
    everything is reused). MiniLM is skipped, not failed, when its export packages are missing.
    """
    out_dir = Path(out_dir)
    skipped: dict[str, str] = {}
    wanted = force or not minilm.is_built(out_dir)
    missing = minilm.missing_packages() if wanted else []
    if missing:
        skipped[minilm.NAME] = (
            f"exporting it needs {', '.join(missing)} (the `build` extra: "
            "pip install torch==2.13.0 'hybridinfer[build]'); without it there are no local "
            "summaries or retrieval"
        )
    steps = _Steps(progress, minilm.STEPS if wanted and not missing else 0)
    cards: list[dict[str, Any]] = [
        card.to_dict() for card in build_models(out_dir, progress=steps.classifiers, force=force)
    ]
    if not missing:
        cards.append(minilm.build_minilm(out_dir, step=steps.step, force=force))
    return Bundle(cards, skipped)
