"""Canary releases of policy versions: the stable traffic split and the version state machine.

A version is ``staged`` (stored, serving nothing), ``canary`` (serving ``percent`` of the
traffic), ``active`` (serving the rest, or all of it) or ``retired``. One version is active and
at most one is in canary at a time:

    staged/retired ──canary(p)──► canary ──promote──► active (the old active is retired)
                                    │  └──canary(p')──► canary (a step up or down)
                                    └──rollback──► retired (the active one serves everything)
    active ──rollback──► retired, and the version active before it is active again

Anything else is refused with 409 ``invalid_transition`` and the reason. The functions here
are pure: they read a snapshot of the versions' states and return the changes to write, so the
store can apply them as one compare-and-set transaction.

The split hashes a routing key (the caller's ``X-Routing-Key`` header, else the request id)
with the canary's version: a key lands on the same side on every replica and every request,
and a key on the canary side at 5 % stays there at 20 %, 50 % and 100 %.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from hybridinfer.errors import InvalidInput, InvalidTransition, NotFound

CANARY_STEPS = (5.0, 20.0, 50.0, 100.0)
"""Percentages a canary walks through when no percent is given (design §5)."""

_BUCKETS = 10_000


def bucket(routing_key: str, salt: str) -> float:
    """Where ``routing_key`` falls in [0, 100): the same key and salt, the same answer, on
    every replica (sha256, not Python's per-process ``hash``)."""
    digest = hashlib.sha256(f"{salt}\x00{routing_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % _BUCKETS * (100.0 / _BUCKETS)


def on_canary_side(routing_key: str, salt: str, percent: float) -> bool:
    return bucket(routing_key, salt) < percent


def next_step(percent: float | None) -> float:
    """The next canary step above ``percent`` (5 to start); 100 stays 100."""
    for step in CANARY_STEPS:
        if percent is None or step > percent:
            return step
    return CANARY_STEPS[-1]


def check_percent(percent: float) -> float:
    if not 0.0 < percent <= 100.0:
        raise InvalidInput("percent must be above 0 and at most 100")
    return percent


@dataclass(frozen=True, slots=True)
class VersionState:
    """One stored version as the state machine sees it."""

    version: str
    status: str
    """``staged`` | ``canary`` | ``active`` | ``retired``."""
    percent: float | None = None
    activated_at: float | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """Move ``version`` from ``before`` to ``after`` (with the canary percent, if any)."""

    version: str
    before: str
    after: str
    percent: float | None = None


def summary(states: list[VersionState]) -> dict[str, object]:
    """What serves traffic: the audit log's before/after of a policy action."""
    active = next((s.version for s in states if s.status == "active"), None)
    canary = next((s for s in states if s.status == "canary"), None)
    return {
        "active": active,
        "canary": None
        if canary is None
        else {"version": canary.version, "percent": canary.percent},
    }


def _find(states: list[VersionState], version: str) -> VersionState:
    for state in states:
        if state.version == version:
            return state
    raise NotFound(f"no policy with version {version!r}", code="unknown_policy")


def plan_canary(states: list[VersionState], version: str, percent: float | None) -> list[Change]:
    """Start a canary, or move a running one to ``percent`` (the next step when None)."""
    target = _find(states, version)
    if target.status == "active":
        raise InvalidTransition(f"policy {version!r} is already active; nothing to canary")
    running = next((s for s in states if s.status == "canary" and s.version != version), None)
    if running is not None:
        raise InvalidTransition(
            f"policy {running.version!r} is in canary at {running.percent:g} %; "
            "promote it or roll it back first"
        )
    chosen = check_percent(percent) if percent is not None else next_step(target.percent)
    return [Change(version, target.status, "canary", chosen)]


def plan_promote(states: list[VersionState], version: str) -> list[Change]:
    """Make the canary the active version; the version it replaces is retired."""
    target = _find(states, version)
    if target.status != "canary":
        raise InvalidTransition(
            f"policy {version!r} is {target.status}, not in canary; "
            "start a canary before promoting it"
        )
    changes = [Change(s.version, "active", "retired") for s in states if s.status == "active"]
    return [*changes, Change(version, "canary", "active")]


def plan_rollback(states: list[VersionState], version: str) -> list[Change]:
    """End a canary, or put back the version that was active before ``version``."""
    target = _find(states, version)
    if target.status == "canary":
        return [Change(version, "canary", "retired")]
    if target.status != "active":
        raise InvalidTransition(
            f"policy {version!r} is {target.status}: only the active version or a canary "
            "can be rolled back"
        )
    earlier = [
        s
        for s in states
        if s.status == "retired" and s.activated_at is not None and s.version != version
    ]
    if not earlier:
        raise InvalidTransition(f"no version was active before {version!r}; nothing to restore")
    previous = max(earlier, key=lambda s: s.activated_at or 0.0)
    return [Change(version, "active", "retired"), Change(previous.version, "retired", "active")]
