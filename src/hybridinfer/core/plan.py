"""The plan of one request: a DAG of subtasks, each labelled for the router."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Privacy(StrEnum):
    """How far a subtask's data may travel; ordered from least to most restricted."""

    PUBLIC = "public"
    INTERNAL = "internal"
    SENSITIVE = "sensitive"

    @property
    def rank(self) -> int:
        return _PRIVACY_RANK[self]

    def at_least(self, other: Privacy) -> Privacy:
        """The stricter of the two labels."""
        return self if self.rank >= other.rank else other


_PRIVACY_RANK = {Privacy.PUBLIC: 0, Privacy.INTERNAL: 1, Privacy.SENSITIVE: 2}


@dataclass(slots=True)
class Subtask:
    """One model call in a plan, with the labels the router decides on.

    ``inputs`` maps the model's input names to values already resolved, or to references
    (``$inputs.text``, ``$classify.label``) that the executor resolves once the subtask's
    dependencies have run.
    """

    id: str
    capability: str
    task: str | None
    inputs: dict[str, Any]
    depends_on: tuple[str, ...] = ()
    privacy: Privacy = Privacy.INTERNAL
    size: int = 0
    complexity: float = 0.5
    priority: int = 0
    soft: bool = False
    """A soft subtask may fail without failing the request (the answer is then ``partial``)."""
    latency_sensitive: bool = False
    """The caller waits on it interactively: policies may keep it off slow links."""
    stays_local: bool = False
    """Placed on the local tier even when the request forces another one."""
    hedge: bool = False
    """The next deployment of its chain may be raced against the first (``execute/hedge.py``)."""
    raw_inputs: frozenset[str] = frozenset()
    """The request inputs whose raw values it sees (directly or through earlier steps)."""
    difficulty: float | None = None
    """How hard its prompt is, 0..1 (``route/difficulty.py``); None when not scored."""
    privacy_mode: str = "private"
    """``private``: personal data keeps it in the private zone; ``pseudonymise``: it may
    leave once its values are replaced (``policy/privacymodes.py``)."""

    def labels(self) -> dict[str, Any]:
        """The labels a trace shows for this subtask."""
        return {
            "id": self.id,
            "capability": self.capability,
            "task": self.task,
            "depends_on": list(self.depends_on),
            "privacy": self.privacy.value,
            "size": self.size,
            "complexity": self.complexity,
            "soft": self.soft,
            "latency_sensitive": self.latency_sensitive,
            "stays_local": self.stays_local,
            "difficulty": None if self.difficulty is None else round(self.difficulty, 4),
            "privacy_mode": self.privacy_mode,
        }


@dataclass(slots=True)
class Plan:
    """A request broken into subtasks, plus how their outputs form the answer."""

    task: str
    subtasks: list[Subtask]
    outputs: dict[str, str] = field(default_factory=dict)
    """Answer field → reference to a subtask output (``$classify.label``)."""
    privacy: dict[str, Any] = field(default_factory=dict)
    """What the privacy scan found: kinds and counts, never values."""

    def describe(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "subtasks": [subtask.labels() for subtask in self.subtasks],
            "outputs": dict(self.outputs),
            "privacy": dict(self.privacy),
        }
