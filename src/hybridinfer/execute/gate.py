"""The privacy gate: the last check before a call leaves the private zone.

The router already keeps ``sensitive`` subtasks in the private zone; the gate holds the rule
again at the only place bytes leave, for every path that can reach a public deployment —
the chosen one, a fallback, a hedge, a cascade escalation, a stream. Before the first such
call of a subtask it reads the raw inputs the subtask sees for names and places (once per
input and request). When it finds some, or the reading fails (fail closed, the policy's
``on_detector_failure``), the subtask becomes ``sensitive`` and the call is refused with
403 ``privacy_violation``; the chain goes on to its private deployments.

A subtask in privacy mode ``pseudonymise`` is not refused: ``outbound`` gives the inputs to
send a public deployment with every personal value replaced (names too, when the policy reads
them), ``inbound`` and ``restoring`` put the values back in its answer (``pseudonymise.py``).
Once that failed for a subtask, the gate lets no later call of it out (``on_failure: error``:
no call at all, the subtask fails with 503 ``pseudonymisation_failed``; ``local``: private
deployments only).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from typing import Any

from hybridinfer.core.decision import Candidate
from hybridinfer.core.plan import Plan, Privacy, Subtask
from hybridinfer.core.topology import Zone
from hybridinfer.decompose.names import NameCheck
from hybridinfer.errors import PrivacyViolation, PseudonymisationFailed
from hybridinfer.execute.pseudonymise import Pieces, Pseudonymisation
from hybridinfer.policy.document import PrivacyPolicy
from hybridinfer.policy.privacymodes import PrivacyModes
from hybridinfer.privacy.detect import Detector, default_detector


class PrivacyGate:
    """One request's gate: what it read, what it found (kinds and counts, never values)."""

    def __init__(
        self,
        plan: Plan,
        request_inputs: Mapping[str, Any],
        names: NameCheck | None,
        policy: PrivacyPolicy,
        modes: PrivacyModes | None = None,
        detector: Detector | None = None,
    ) -> None:
        """``modes`` and ``detector``: the policy's privacy modes and the detector of its
        phone regions, for subtasks that are pseudonymised."""
        self._plan = plan
        self._inputs = request_inputs
        self._names = names
        self._policy = policy
        self._reads: dict[str, asyncio.Future[bool] | bool] = {}
        """Input name → its reading under way, or its answer when it was remembered."""
        self._kinds_before = Counter(plan.privacy.get("kinds", {}))
        self._found: Counter[str] = Counter()
        self._failed: set[str] = set()
        self._modes = modes or PrivacyModes()
        self._detector = detector or default_detector()
        self._pseudonyms: dict[str, Pseudonymisation] = {}

    async def clear(self, subtask: Subtask, candidate: Candidate, deadline: float) -> None:
        """Return when ``subtask`` may be sent to ``candidate``; raise PrivacyViolation else.

        Names are read unless the process runs without a name finder (``privacy_ner`` off)
        or the policy says ``names: false``."""
        held = self._pseudonyms.get(subtask.id)
        if held is not None and held.failure is not None:
            self._refuse_after_failure(subtask, candidate)
        if candidate.node.zone is not Zone.PUBLIC or subtask.privacy_mode == "pseudonymise":
            return
        reads_names = self._names is not None and self._policy.names
        if subtask.privacy is not Privacy.SENSITIVE and reads_names:
            # Only the inputs this request holds: a chat subtask may see eleven (messages,
            # max_tokens, temperature, tools, ...), and most requests send two.
            present = sorted(name for name in subtask.raw_inputs if name in self._inputs)
            personal = [name for name in present if await self._holds(name, deadline)]
            self._note()
            if personal:
                subtask.privacy = Privacy.SENSITIVE
        if subtask.privacy is Privacy.SENSITIVE:
            raise PrivacyViolation(
                f"subtask {subtask.id!r} holds personal data and may not leave the private zone"
            )

    def _refuse_after_failure(self, subtask: Subtask, candidate: Candidate) -> None:
        if self._modes.on_failure == "error":
            raise PseudonymisationFailed(
                f"subtask {subtask.id!r}: pseudonymisation failed; it is not tried again"
            )
        if candidate.node.zone is Zone.PUBLIC:
            raise PrivacyViolation(
                f"subtask {subtask.id!r} could not be pseudonymised and may not leave the "
                "private zone"
            )

    def pseudonymises(self, subtask: Subtask, candidate: Candidate) -> bool:
        """Whether a call of ``subtask`` to ``candidate`` goes out pseudonymised."""
        return subtask.privacy_mode == "pseudonymise" and candidate.node.zone is Zone.PUBLIC

    async def outbound(
        self, subtask: Subtask, candidate: Candidate, inputs: Mapping[str, Any], deadline: float
    ) -> Mapping[str, Any]:
        """The inputs to send ``candidate``: pseudonymised for a public call of a subtask in
        mode ``pseudonymise``, else ``inputs``. Raises ``PseudonymisationFailed``."""
        if not self.pseudonymises(subtask, candidate):
            return inputs
        held = self._pseudonyms.get(subtask.id)
        if held is None:
            held = self._pseudonyms[subtask.id] = Pseudonymisation(
                self._detector, self._names, self._policy
            )
        try:
            return await held.outbound(inputs, deadline)
        finally:
            self._note_pseudonyms()

    def inbound(
        self, subtask: Subtask, candidate: Candidate, outputs: dict[str, Any]
    ) -> dict[str, Any]:
        """``candidate``'s whole answer, its values put back when the call was pseudonymised."""
        if not self.pseudonymises(subtask, candidate):
            return outputs
        try:
            return self._pseudonyms[subtask.id].inbound(outputs)
        finally:
            self._note_pseudonyms()

    def restoring(self, subtask: Subtask, candidate: Candidate, pieces: Pieces) -> Pieces:
        """``candidate``'s streamed answer, its values put back when the call was pseudonymised."""
        if not self.pseudonymises(subtask, candidate):
            return pieces
        return self._noted(self._pseudonyms[subtask.id].restoring(pieces))

    async def _noted(self, pieces: Pieces) -> AsyncIterator[dict[str, Any]]:
        try:
            async for piece in pieces:
                yield piece
        finally:
            await pieces.aclose()  # type: ignore[attr-defined]
            self._note_pseudonyms()

    def _note_pseudonyms(self) -> None:
        """Record per subtask what was replaced and restored (kinds and counts, no value)."""
        self._plan.privacy["pseudonymised"] = {
            subtask_id: held.describe() for subtask_id, held in self._pseudonyms.items()
        }

    async def _holds(self, name: str, deadline: float) -> bool:
        """Whether request input ``name`` holds a name or a place (read once per request).
        A value whose every text was read before is answered at once, without a task."""
        read = self._reads.get(name)
        if read is None:
            known = self._remembered(name)
            if known is not None:
                return known
            read = self._reads[name] = asyncio.ensure_future(self._read(name, deadline))
        elif isinstance(read, bool):
            return read
        return await asyncio.shield(read)

    def _remembered(self, name: str) -> bool | None:
        """``_read``'s answer for a value the name check has read before, filed as read."""
        assert self._names is not None
        kinds = self._names.remembered_kinds_in(self._inputs.get(name, ""))
        if kinds is None:
            return None
        self._found.update(kinds)
        self._reads[name] = bool(kinds)
        return bool(kinds)

    async def _read(self, name: str, deadline: float) -> bool:
        if name not in self._inputs:
            return False
        assert self._names is not None
        try:
            kinds = await self._names.kinds_in(
                self._inputs[name], self._policy.names_timeout_ms / 1000.0, deadline
            )
        except Exception:  # fail closed: a model that errs or is away reads as personal data
            self._failed.add(name)
            return self._policy.on_detector_failure == "sensitive"
        self._found.update(kinds)
        return bool(kinds)

    def _note(self) -> None:
        """Record in the plan's privacy summary what the names reading found."""
        summary = self._plan.privacy
        summary["kinds"] = dict(self._kinds_before + self._found)
        summary["names_checked"] = sorted(self._reads)
        summary["detector_failed"] = sorted(set(summary.get("detector_failed", [])) | self._failed)
