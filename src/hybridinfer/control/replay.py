"""What-if replay of a stored policy version on logged traffic (``POST
/v1/policies/{version}/replay``, ``hybridinfer policy replay``).

Logged traces are re-decided offline by ``route/replay.py`` — no model is called — and
summed per capability: decisions changed and to which tier, cloud share, spend, expected
quality and latency, logged against predicted. Two hard checks: zero privacy violations, and
the policy's ``guard:`` block held against the logged figures (error rate is not predicted:
replay calls nothing). Either failing marks the report ``passed: false``, so the CLI exits
non-zero and can gate a deploy. A staged router is re-read on the opt-in retained prompt
sample among the traces (``route/rescore.py``); other decisions reuse their logged verdict.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hybridinfer.errors import InvalidInput
from hybridinfer.policy.document import CompiledPolicy
from hybridinfer.policy.guard import Figures, breaches, p99
from hybridinfer.route.difficulty import DifficultyScorer
from hybridinfer.route.replay import Outcome, Replayer, logged_outcome
from hybridinfer.route.rescore import Key, Rescored, replay_scorer, rescore
from hybridinfer.store.retained import RetainedPrompts, load_retained
from hybridinfer.store.snapshots import load_snapshots
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.walks import Walks

MAX_TRACES = 100_000
"""The most traces one replay reads."""
MAX_RESCORED = 2_000
"""The most retained prompts one replay re-scores (the newest): 7 to 28 ms each on 2 busy
cores (``bench/retained.py``); the others keep their logged verdict."""


@dataclass(slots=True)
class _Side:
    """Sums of one side (logged or predicted) of one capability."""

    cloud: int = 0
    spend: float = 0.0
    qualities: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.cloud += outcome.tier == "cloud"
        self.spend += outcome.spend
        if outcome.quality is not None:
            self.qualities.append(outcome.quality)
        self.latencies.append(outcome.latency_ms)

    def describe(self, decisions: int) -> dict[str, float | None]:
        share = self.cloud / decisions if decisions else 0.0
        quality = sum(self.qualities) / len(self.qualities) if self.qualities else None
        mean = sum(self.latencies) / len(self.latencies) if self.latencies else 0.0
        return {
            "cloud_share": round(share, 4),
            "spend": round(self.spend, 8),
            "quality": None if quality is None else round(quality, 4),
            "latency_mean_ms": round(mean, 3),
            "latency_p99_ms": round(p99(self.latencies), 3),
        }


@dataclass(slots=True)
class _Capability:
    decisions: int = 0
    changed: int = 0
    moves: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    unknown_confidence: int = 0
    gate_unknown: int = 0
    privacy_violations: int = 0
    logged: _Side = field(default_factory=_Side)
    predicted: _Side = field(default_factory=_Side)

    def add(self, before: Outcome, after: Outcome) -> None:
        self.decisions += 1
        self.logged.add(before)
        self.predicted.add(after)
        if after.deployment != before.deployment:
            self.changed += 1
            self.moves[f"{before.tier}->{after.tier}"] += 1
        if after.refused is not None:
            self.refused[after.refused] += 1
        self.unknown_confidence += not after.confidence_known
        self.gate_unknown += after.gate_unknown
        self.privacy_violations += after.privacy_violation

    def describe(self) -> dict[str, Any]:
        return {
            "decisions": self.decisions,
            "changed": self.changed,
            "moves": dict(self.moves),
            "refused": dict(self.refused),
            "unknown_confidence": self.unknown_confidence,
            "gate_unknown": self.gate_unknown,
            "privacy_violations": self.privacy_violations,
            "logged": self.logged.describe(self.decisions),
            "predicted": self.predicted.describe(self.decisions),
        }


class ReplayReport:
    """Replays traces under one policy and sums the outcomes (pure: no store)."""

    def __init__(
        self, policy: CompiledPolicy, rescored: Mapping[Key, Rescored] | None = None
    ) -> None:
        self._replayer = Replayer(policy)
        self._policy = policy
        self._rescored = rescored or {}
        self._capabilities: defaultdict[str, _Capability] = defaultdict(_Capability)
        self._all = _Capability()
        self._sample = _Capability()
        """The re-scored decisions alone: what the staged router predicts on the sample."""
        self.traces = 0
        self.verdicts: Counter[str] = Counter()
        """Decisions whose difficulty was re-scored from the retained sample, or reused."""

    def add(self, trace: Mapping[str, Any], snapshots: Mapping[str, Any]) -> None:
        """Replay every decision of one logged trace."""
        self.traces += 1
        for logged in trace.get("decisions") or ():
            snapshot = snapshots.get(logged.get("signals_ref") or "")
            rescored = self._rescored.get((trace.get("request_id") or "", logged["subtask"]))
            if rescored is not None:
                self.verdicts["rescored"] += 1
            elif logged.get("difficulty"):
                self.verdicts["reused"] += 1
            after = self._replayer.replay(trace, logged, snapshot, rescored)
            before = logged_outcome(trace, logged)
            self._capabilities[after.capability].add(before, after)
            self._all.add(before, after)
            if rescored is not None:
                self._sample.add(before, after)

    def _figures(self, side: _Side) -> Figures:
        decisions = self._all.decisions
        return Figures(
            requests=self.traces,
            error_rate=0.0,
            p99_ms=p99(side.latencies),
            cloud_share=side.cloud / decisions if decisions else 0.0,
            spend_per_request=side.spend / self.traces if self.traces else 0.0,
        )

    def result(self) -> dict[str, Any]:
        """The report: per capability, overall, privacy and guard checks, ``passed``."""
        broken = breaches(
            self._policy.policy.guard,
            self._figures(self._all.predicted),
            self._figures(self._all.logged),
        )
        violations = self._all.privacy_violations
        return {
            "version": self._policy.version,
            "traces": self.traces,
            "capabilities": {name: c.describe() for name, c in sorted(self._capabilities.items())},
            "overall": self._all.describe(),
            "privacy_violations": violations,
            "breaches": [breach.describe() for breach in broken],
            "passed": violations == 0 and not broken,
            "router": {
                "rescored": self.verdicts["rescored"],
                "reused_verdicts": self.verdicts["reused"],
                "sample": self._sample.describe(),
            },
        }


class ReplayService:
    """Loads a stored version and logged traces; answers the replay report."""

    def __init__(
        self,
        store: SqlStore,
        load: Callable[[str], Awaitable[CompiledPolicy]],
        flush: Callable[[], Awaitable[None]],
        clock: Callable[[], float] = time.time,
        retained: RetainedPrompts | None = None,
        scorer: DifficultyScorer | None = None,
    ) -> None:
        """``retained``: the retained prompt sample (None: off); ``scorer``: the live
        difficulty scorer, whose embedder a staged router's replay reuses."""
        self._retained = retained
        self._scorer = scorer
        self._store = store
        self._walks = Walks(store)
        self._load = load
        self._flush = flush
        self._clock = clock

    async def replay(
        self,
        version: str,
        since_s: float | None = None,
        traces: int | None = None,
        router_artifact: str | None = None,
    ) -> dict[str, Any]:
        """Re-decide the last ``traces`` traces, or those of the last ``since_s`` seconds;
        ``router_artifact``: a chat difficulty head to replay instead of the live one."""
        if (since_s is None) == (traces is None):
            raise InvalidInput("give exactly one of since_s and traces")
        if traces is not None and not 0 < traces <= MAX_TRACES:
            raise InvalidInput(f"traces must be between 1 and {MAX_TRACES}")
        if since_s is not None and not 0 < since_s <= 30 * 86_400:
            raise InvalidInput("since_s must be above 0 and at most 30 days")
        policy = await self._load(version)
        await self._flush()
        if traces is not None:
            logged = list(reversed(await self._store.list_traces(traces, None)))
        else:
            logged = await self._walks.traces_since(self._clock() - (since_s or 0.0), MAX_TRACES)
        snapshots = await load_snapshots(self._store, set(_refs(logged)))
        rescored, sample = await self._rescore(policy, logged, router_artifact)
        report = ReplayReport(policy, rescored)
        for trace in logged:
            report.add(trace, snapshots)
        result = report.result()
        result["router"] |= {"retained_prompts": sample, "note": _note(self._retained, sample)}
        result["baseline_versions"] = dict(Counter(t.get("policy_version") for t in logged))
        result["snapshots_found"] = len(snapshots)
        return result

    async def _rescore(
        self, policy: CompiledPolicy, logged: list[dict[str, Any]], artifact: str | None
    ) -> tuple[dict[Key, Rescored], int]:
        """The staged router's verdicts on the traces' retained prompts, and how many."""
        if self._retained is None or self._scorer is None:
            if artifact is not None:
                raise InvalidInput(
                    "a router artifact replays only on retained prompts, and "
                    "retained_prompts is off (or no difficulty model is built)"
                )
            return {}, 0
        ids = {str(t["request_id"]) for t in logged if t.get("request_id")}
        prompts = await load_retained(self._store, ids, self._retained.ttl_s, self._clock())
        found = len(prompts)
        if not prompts:
            return {}, 0
        if found > MAX_RESCORED:
            newest = sorted(prompts.items(), key=lambda item: item[1].at)[-MAX_RESCORED:]
            prompts = dict(newest)
        scorer = replay_scorer(self._scorer, artifact)
        try:
            return await rescore(scorer, policy, prompts), found
        finally:
            scorer.close()


def _note(retained: RetainedPrompts | None, sample: int) -> str:
    if retained is None:
        return "no retained sample (retained_prompts is off): logged difficulty verdicts reused"
    if not sample:
        return "no retained prompt among these traces: logged difficulty verdicts reused"
    return (
        f"{sample} retained prompts found, re-scored under the staged router (the newest "
        f"{MAX_RESCORED} at most); other decisions reuse their logged verdict"
    )


def _refs(traces: Iterable[Mapping[str, Any]]) -> Iterable[str]:
    for trace in traces:
        for decision in trace.get("decisions") or ():
            ref = decision.get("signals_ref")
            if ref:
                yield str(ref)
