"""The cache stage of one subtask: after routing, before the call; and the answer kept after.

A lookup files the call (``keys.py``) under the chosen deployment's model version, reads the
exact entry, and — for a text capability the policy sets to ``semantic`` — the nearest prompts
of its index whose similarity reaches the capability's threshold and whose signature
(``signature.py``) agrees; without the guard's model and WordNet (the ``answers`` extra) there
is no semantic hit. Requests whose plan holds sensitive data read and write only
the private-zone store; the others only the shared one. A store that fails is a miss (counted):
the cache never fails a request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hybridinfer.answers.base import Answer, AnswerStore, Vector
from hybridinfer.answers.keys import Filing, file_call, namespace_of
from hybridinfer.answers.signature import GuardUnavailable, agree, signature
from hybridinfer.answers.signature import load as load_guard
from hybridinfer.answers.signature import loaded as guard_loaded
from hybridinfer.answers.stats import AnswerStats
from hybridinfer.core.decision import Candidate
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.errors import HybridInferError
from hybridinfer.policy.answers import (
    GENERATIONS,
    TEXT_CAPABILITIES,
    AnswersPolicy,
    CapabilityReuse,
)

log = logging.getLogger(__name__)

Mode = Literal["auto", "off", "refresh", "reuse"]
"""``auto``: the policy's defaults; ``off`` (``Cache-Control: no-store``): neither read nor
written; ``refresh`` (``no-cache``): not read, the new answer written; ``reuse``: as auto, and
a generation is reused at any temperature."""
Embed = Callable[[str], Awaitable[Vector | None]]


@dataclass(frozen=True, slots=True)
class ReuseRequest:
    """What one request allows: whose entries (tenant, scope), how, and in which zone."""

    tenant: str
    scope: str | None = None
    mode: Mode = "auto"
    private: bool = False
    """The plan holds sensitive data: its answers live in the private-zone store only."""
    findings: Mapping[str, Any] = field(default_factory=dict)
    """The plan's privacy summary, live: personal data found later (names read before a
    public call, a detector that failed) makes the request private from then on."""

    def in_private_zone(self, subtask: Subtask) -> bool:
        """Whether this subtask's answer is sensitive-derived (read and kept privately)."""
        findings = self.findings
        return (
            self.private
            or subtask.privacy is Privacy.SENSITIVE
            or bool(findings.get("kinds"))
            or bool(findings.get("detector_failed"))
        )


@dataclass(frozen=True, slots=True)
class Reused:
    """A hit: the answer, how it matched, and how long the lookup took."""

    answer: Answer
    kind: Literal["hit", "semantic"]
    similarity: float
    lookup_ms: float

    def describe(self) -> dict[str, Any]:
        """The trace's and the response's account of the hit (no prompt, no outputs)."""
        return {
            "kind": self.kind,
            "similarity": round(self.similarity, 4),
            "request_id": self.answer.request_id,
            "deployment": self.answer.deployment,
            "age_s": round(max(0.0, time.time() - self.answer.created_at), 3),
            "saved": self.answer.cost,
        }


@dataclass(slots=True)
class _Call:
    settings: CapabilityReuse
    filing: Filing
    store: AnswerStore


@dataclass
class AnswerStage:
    """Reads and keeps subtask answers; one per gateway process."""

    shared: AnswerStore
    private: AnswerStore
    policy: Callable[[], AnswersPolicy]
    embed: Embed | None = None
    stats: AnswerStats = field(default_factory=AnswerStats)
    _warned: bool = field(default=False, init=False, repr=False)

    def _call(
        self,
        subtask: Subtask,
        candidate: Candidate,
        inputs: Mapping[str, Any],
        request: ReuseRequest,
    ) -> _Call | None:
        """How this call may be reused, or None when it may not."""
        if request.mode == "off":
            return None
        settings = self.policy().reuse(subtask.capability)
        if settings is None:
            return None
        sampled = inputs.get("temperature") != 0  # another call would answer otherwise
        if subtask.capability in GENERATIONS and request.mode != "reuse" and sampled:
            return None
        deployment = candidate.deployment
        model = f"{deployment.model}:{deployment.version}"
        if not settings.across_tiers:
            model += f"@{candidate.node.tier.value}"
        semantic = settings.mode == "semantic" and subtask.capability in TEXT_CAPABILITIES
        namespace = namespace_of(request.tenant, request.scope, subtask.capability)
        filing = file_call(namespace, model, inputs, semantic)
        store = self.private if request.in_private_zone(subtask) else self.shared
        return _Call(settings, filing, store)

    async def lookup(
        self,
        subtask: Subtask,
        candidate: Candidate,
        inputs: Mapping[str, Any],
        request: ReuseRequest,
    ) -> Reused | None:
        """The answer to reuse for this call, if there is one."""
        call = self._call(subtask, candidate, inputs, request)
        if call is None or request.mode == "refresh":
            return None
        started = time.perf_counter()
        try:
            found = await self._find(call)
        except HybridInferError as error:
            self.stats.failed(subtask.capability)
            log.warning("answer lookup failed (%s): a miss", error.error_code)
            return None
        if found is None:
            self.stats.missed(subtask.capability)
            return None
        answer, kind, similarity = found
        self.stats.hit(subtask.capability, kind, answer.cost)
        return Reused(answer, kind, similarity, (time.perf_counter() - started) * 1000.0)

    async def _find(self, call: _Call) -> tuple[Answer, Literal["hit", "semantic"], float] | None:
        filing = call.filing
        answer = await call.store.get(filing.key)
        if answer is not None:
            return answer, "hit", 1.0
        if filing.index is None or filing.prompt is None or self.embed is None:
            return None
        vector = await self.embed(filing.prompt)
        if vector is None:
            return None
        wanted: tuple[str, ...] | None = None
        for neighbour in await call.store.nearest(filing.index, vector, call.settings.threshold):
            answer = await call.store.get(neighbour.key)
            if answer is None:
                continue
            if wanted is None:  # read only when a neighbour is close enough
                wanted = await self._signature(filing.prompt)
            if wanted and agree(answer.signature, wanted):
                return answer, "semantic", neighbour.similarity
        return None

    async def _signature(self, prompt: str) -> tuple[str, ...]:
        """The prompt's signature; () when the guard is not installed, which agrees with
        nothing. Read in line once the model is loaded (about 1.6 ms of the event loop, only
        when a neighbour reached the threshold, or when a semantic answer is kept: a thread hop
        measured about 0.1 ms more per hit); the load itself (seconds) runs on a thread."""
        try:
            if not guard_loaded():
                await asyncio.to_thread(load_guard)
            return signature(prompt)
        except GuardUnavailable as error:
            if not self._warned:
                log.warning("no semantic answer reuse: %s (the answers extra)", error)
                self._warned = True
            return ()

    async def keep(
        self,
        subtask: Subtask,
        candidate: Candidate,
        inputs: Mapping[str, Any],
        request: ReuseRequest,
        answer: Answer,
    ) -> None:
        """File ``answer`` of the call of ``candidate`` (errors are logged and counted)."""
        call = self._call(subtask, candidate, inputs, request)
        if call is None:
            return
        filing = call.filing
        vector: Vector | None = None
        if filing.index is not None and filing.prompt is not None and self.embed is not None:
            vector = await self.embed(filing.prompt)
            answer = dataclasses.replace(answer, signature=await self._signature(filing.prompt))
        try:
            await call.store.put(filing.key, answer, call.settings.ttl_s, filing.index, vector)
        except HybridInferError as error:
            self.stats.failed(subtask.capability)
            log.warning("answer not kept (%s)", error.error_code)

    async def flush(self, tenant: str, scope: str | None = None) -> int:
        """Remove a tenant's entries (or one of its scopes) from both stores."""
        prefix = f"{tenant}/" if scope is None else namespace_of(tenant, scope, "")
        return await self.shared.flush(prefix) + await self.private.flush(prefix)

    async def aclose(self) -> None:
        await self.shared.aclose()
        if self.private is not self.shared:
            await self.private.aclose()
