"""One subtask's pseudonymisation on its way to the public zone and back (privacy mode
``pseudonymise``): every field of its inputs replaced locally, once, under one mapping that
lives only here, in this request's memory; the answer restored, whole or piece by piece.

It fails closed. A detector that raises, a name finder that errs, times out or is missing
while the policy reads names: the inputs are never sent (``PseudonymisationFailed``). A restore
that fails mid-stream closes the upstream stream at once, so nothing more is exchanged with the
public node, and ends the answer with the error: the text it was holding (a possible
placeholder) is dropped, never passed off as a value. ``describe`` is what the trace shows:
kinds, counts and whether restoring succeeded, never a value.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, NoReturn

from hybridinfer.decompose.names import Finder, NameCheck
from hybridinfer.errors import PseudonymisationFailed
from hybridinfer.policy.document import PrivacyPolicy
from hybridinfer.privacy.conversation import redact_inputs
from hybridinfer.privacy.detect import Detector
from hybridinfer.privacy.pseudonym import Pseudonymiser
from hybridinfer.privacy.restore import AnswerRestorer

Pieces = AsyncIterator[dict[str, Any]]


class Pseudonymisation:
    """The mapping, the pseudonymised inputs and the outcome of one subtask."""

    def __init__(self, detector: Detector, names: NameCheck | None, policy: PrivacyPolicy) -> None:
        """``names``: the name finder, read when the policy says ``names: true`` (None: the
        process runs without one, ``privacy_ner`` off: patterns only)."""
        self._detector = detector
        self._names = names if policy.names else None
        self._timeout_s = policy.names_timeout_ms / 1000.0
        self.mapping: Pseudonymiser | None = None
        self._sent: asyncio.Future[dict[str, Any]] | None = None
        self.failure: str | None = None
        """Why it failed (``detection`` or ``restore``), None while it has not."""
        self.restore = "pending"
        """``ok`` once an answer was restored, ``failed`` when restoring one failed; ``pending``
        while none came back (or the call failed before one did)."""

    async def outbound(self, inputs: Mapping[str, Any], deadline: float) -> dict[str, Any]:
        """The inputs as they may leave: computed once (a retry, fallback or hedge to another
        public node sends the same placeholders); raises ``PseudonymisationFailed``."""
        if self._sent is None:
            self._sent = asyncio.ensure_future(self._redact(dict(inputs), deadline))
        return await asyncio.shield(self._sent)

    async def _redact(self, inputs: dict[str, Any], deadline: float) -> dict[str, Any]:
        def work(finder: Finder | None = None) -> tuple[Pseudonymiser, dict[str, Any]]:
            mapping = Pseudonymiser(finder.find if finder else None, self._detector)
            return mapping, redact_inputs(mapping, inputs)

        try:
            if self._names is None:
                self.mapping, sent = work()
            else:
                self.mapping, sent = await self._names.run(work, self._timeout_s, deadline)
        except Exception as exc:  # fail closed: whatever broke, nothing is sent
            self.failure = "detection"
            raise PseudonymisationFailed(
                f"personal data could not be replaced ({type(exc).__name__}); "
                "nothing was sent to the public zone"
            ) from None
        return sent

    def inbound(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """A whole answer with its values put back."""
        try:
            restored = self._mapping().restore(outputs)
        except Exception as exc:
            self._failed(exc)
        self.restore = "ok"
        return dict(restored)

    async def restoring(self, pieces: Pieces) -> Pieces:
        """A streamed answer's pieces with their values put back (see ``AnswerRestorer``)."""
        answer = AnswerRestorer(self._mapping())
        try:
            async for piece in pieces:
                try:
                    restored = answer.piece(piece)
                except Exception as exc:
                    self._failed(exc)
                if restored is not None:
                    yield restored
            rest = answer.finish()
            if rest:
                yield {"delta": {"content": rest}, "finish_reason": None, "usage": None}
            self.restore = "ok"
        finally:
            await pieces.aclose()  # type: ignore[attr-defined]  # the public node hears no more

    def describe(self) -> dict[str, Any]:
        """What the trace keeps: kinds replaced, counts, and how restoring went."""
        outcome: dict[str, Any] = {"mode": "pseudonymise", "restore": self.restore}
        if self.mapping is not None:
            outcome |= self.mapping.outcome()
        if self.failure is not None:
            outcome["failed"] = self.failure
        return outcome

    def _mapping(self) -> Pseudonymiser:
        if self.mapping is None:
            raise PseudonymisationFailed("an answer came back for inputs never pseudonymised")
        return self.mapping

    def _failed(self, error: Exception) -> NoReturn:
        """Restoring failed: record it and raise the documented error."""
        self.failure, self.restore = "restore", "failed"
        if isinstance(error, PseudonymisationFailed):
            raise error
        raise PseudonymisationFailed(
            f"the answer's values could not be put back ({type(error).__name__}); "
            "the answer was stopped"
        ) from None
