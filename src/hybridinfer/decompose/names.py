"""Names and places in a request's inputs, read with the NER model only when asked.

The model costs ~2-4 ms a text, so nothing reads names at decompose: the privacy gate asks just
before a subtask's inputs would leave the private zone (``execute/gate.py``). Reading runs on
one thread of its own, off the event loop; by default that thread only waits while the model
reads in a child process (``privacy/nerprocess.py``), so its CPU does not hold the lock the
event loop needs. Loading the model takes seconds; ``warm`` starts it when the process
starts, and a request that needs names meanwhile waits for it within its own deadline; reading
itself is bounded by the policy's ``names_timeout_ms``.

A chat resends its whole conversation with every turn, and a system prompt rides on every
request: what one text holds is remembered, per process, by its BLAKE2b digest (the kinds
found, never the text or the names), so each message is read once, not once per turn.

New texts are read in passes: while one pass runs, the texts that arrive wait, and the next
pass reads them all together (up to ``MAX_BATCH``), so the model's fixed cost per call is
shared when requests come faster than one text's reading. One request alone is read at once,
as before. A text whose every asker has given up (their time ran out) is not read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from hybridinfer.decompose.privacy import strings_in
from hybridinfer.privacy.digest import text_digest
from hybridinfer.privacy.findings import Finding


class Finder(Protocol):
    """What the check needs of a name finder (``privacy.ner.NameFinder``)."""

    def load(self) -> None: ...

    def find(self, text: str) -> list[Finding]: ...

    def find_many(self, texts: list[str]) -> list[list[Finding]]:
        """``find`` of each text, in one pass of the model."""
        ...


MAX_BATCH = 16
"""Texts per pass: ~1.2 ms each at 16 against ~2 ms alone (short sentences on 2 cores); a pass
of 16 takes ~20 ms, what a text that arrives just after it may wait on top of its own."""


@dataclass(slots=True)
class _Waiting:
    """A new text waiting for its pass (or in one), with when its last asker gives up."""

    text: str
    answer: asyncio.Future[list[str]]
    until: float


class Work(Protocol):
    """What runs with the finder on the check's thread (``NameCheck.run``)."""

    def __call__(self, finder: Finder) -> Any: ...


class NameCheck:
    """Answers which names and places a value holds; raises when it cannot tell."""

    def __init__(self, finder: Finder | None, remembered: int = 4096) -> None:
        """``finder``: the model's finder, or None when it is configured but not installed
        (every reading then fails, and the gate fails closed). ``remembered``: how many texts'
        readings are kept (least recently used dropped first; 0 keeps none)."""
        self._finder = finder
        self._thread = concurrent.futures.ThreadPoolExecutor(1, "hybridinfer-names")
        self._loaded: concurrent.futures.Future[None] | None = None
        self._loaded_seen = False
        self._remembered = remembered
        self._readings: OrderedDict[bytes, list[str]] = OrderedDict()
        """Digest of a text → the kinds in it. Written only on the check's one thread; the
        caller's thread looks up and refreshes entries (each one C call, atomic under the GIL)
        so a request whose texts were all read before does not wait for the thread."""
        self.reads = 0
        """Texts the model actually read (the rest were remembered)."""
        self.passes = 0
        """Passes of the model over new texts (``reads`` / ``passes``: texts per pass)."""
        self._waiting: dict[bytes, _Waiting] = {}
        """New texts by digest, not yet in a pass; touched on the event loop only."""
        self._reading: dict[bytes, _Waiting] = {}
        """The texts of the pass under way (a request asking for one waits for that pass)."""

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded, or could not be (reads then fail closed at once)."""
        if self._loaded_seen:
            return True
        # Future.done() takes the future's lock: asked for every text of every request, so
        # the answer is kept once it is yes (a load, once done, stays done)
        self._loaded_seen = self._finder is None or (
            self._loaded is not None and self._loaded.done()
        )
        return self._loaded_seen

    def warm(self) -> None:
        """Start loading the model on the check's thread (returns at once)."""
        if self._finder is not None and self._loaded is None:
            self._loaded = self._thread.submit(self._finder.load)

    async def run(self, work: Work, timeout_s: float, deadline: float) -> Any:
        """``work(finder)`` on the check's thread (pseudonymising needs the names' spans, not
        only their kinds), under the loading and time bounds of ``kinds_in``, raising as it
        does."""
        finder = await self._ready(deadline)
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(loop.run_in_executor(self._thread, work, finder), timeout_s)

    async def _ready(self, deadline: float) -> Finder:
        """The finder once its model is loaded (waiting until ``deadline``); ``LookupError``
        without one."""
        finder = self._finder
        if finder is None:
            raise LookupError("no name finder is installed (the `ner` extra)")
        self.warm()
        assert self._loaded is not None
        await asyncio.wait_for(asyncio.wrap_future(self._loaded), deadline - time.monotonic())
        return finder

    def remembered_kinds_in(self, value: Any) -> list[str] | None:
        """``kinds_in``'s answer when every string of ``value`` was read before, without a
        wait (None else): what lets a caller skip scheduling a read it would not need."""
        return self._remembered_kinds([text for text in strings_in(value) if text.strip()])

    async def kinds_in(self, value: Any, timeout_s: float, deadline: float) -> list[str]:
        """The kinds of the names and places in every string of ``value`` (empty: none).

        Waits for the model to load until the monotonic ``deadline``, then reads within
        ``timeout_s``. Raises ``LookupError`` without a model and ``TimeoutError`` when time
        runs out; any error of the model itself propagates: the caller fails closed.
        """
        texts = [text for text in strings_in(value) if text.strip()]
        remembered = self._remembered_kinds(texts)
        if remembered is not None:
            return remembered
        finder = await self._ready(deadline)
        loop = asyncio.get_running_loop()
        until = time.monotonic() + timeout_s
        answers = [self._answer(loop, text, until) for text in texts]
        self._pump(loop, finder)
        if not answers:
            return []
        # ``wait``, not ``wait_for``: an answer is shared by every request asking for the same
        # text, so one request giving up must not cancel it for the others.
        _done, late = await asyncio.wait(answers, timeout=timeout_s)
        if late or any(answer.cancelled() for answer in answers):  # dropped as given up
            raise TimeoutError(f"names not read within {timeout_s:.3f} s")
        return [kind for answer in answers for kind in answer.result()]

    def _answer(
        self, loop: asyncio.AbstractEventLoop, text: str, until: float
    ) -> asyncio.Future[list[str]]:
        """The answer for one text: remembered, shared with a request already waiting for it,
        or a new wait in the next pass."""
        digest = text_digest(text)
        waiting = self._waiting.get(digest) or self._reading.get(digest)
        if waiting is not None:
            waiting.until = max(waiting.until, until)
            return waiting.answer
        answer: asyncio.Future[list[str]] = loop.create_future()
        kinds = self._readings.get(digest)
        if kinds is not None:
            self._touch(digest)
            answer.set_result(kinds)
            return answer
        answer.add_done_callback(_retrieved)
        self._waiting[digest] = _Waiting(text, answer, until)
        return answer

    def _pump(self, loop: asyncio.AbstractEventLoop, finder: Finder) -> None:
        """Start the next pass over the waiting texts, unless one is under way."""
        if self._reading:
            return
        now = time.monotonic()
        for digest, waiting in list(self._waiting.items()):
            if waiting.until <= now:  # everyone who asked has given up
                del self._waiting[digest]
                waiting.answer.cancel()
        if not self._waiting:
            return
        digests = list(self._waiting)[:MAX_BATCH]
        self._reading = {digest: self._waiting.pop(digest) for digest in digests}
        texts = [self._reading[digest].text for digest in digests]
        try:
            passed = loop.run_in_executor(self._thread, self._read_pass, finder, texts, digests)
        except RuntimeError as exc:  # the check was closed: every text fails closed
            for waiting in self._reading.values():
                waiting.answer.set_exception(exc)
            self._reading = {}
            return
        passed.add_done_callback(lambda done: self._passed(loop, finder, done))

    def _read_pass(self, finder: Finder, texts: list[str], digests: list[bytes]) -> list[list[str]]:
        """One pass of the model over ``texts`` (on the check's thread), each remembered."""
        kinds = [[finding.kind for finding in found] for found in finder.find_many(texts)]
        self.reads += len(texts)
        self.passes += 1
        if self._remembered:
            for digest, found in zip(digests, kinds, strict=True):
                self._readings[digest] = found
            while len(self._readings) > self._remembered:
                self._readings.popitem(last=False)
        return kinds

    def _passed(
        self,
        loop: asyncio.AbstractEventLoop,
        finder: Finder,
        done: asyncio.Future[list[list[str]]],
    ) -> None:
        """A pass ended: its answers (or its error, to every text of it: nothing is
        remembered, so each fails closed), then the next pass."""
        reading, self._reading = self._reading, {}
        error = None if done.cancelled() else done.exception()
        for index, waiting in enumerate(reading.values()):
            if waiting.answer.done():
                continue
            if done.cancelled():
                waiting.answer.cancel()
            elif error is not None:
                waiting.answer.set_exception(error)
            else:
                waiting.answer.set_result(done.result()[index])
        self._pump(loop, finder)

    def _remembered_kinds(self, texts: list[str]) -> list[str] | None:
        """The kinds in ``texts`` if every one was read before, on the caller's thread (the
        hop to the check's thread, ~0.1-0.2 ms of CPU, is what a repeated system prompt or a
        resent conversation would otherwise pay); None if any text is new or no model is
        loaded (then ``kinds_in`` reads, waits or fails as it always did)."""
        if self._finder is None or not self._remembered or not self.loaded:
            return None
        found: list[str] = []
        for text in texts:
            digest = text_digest(text)
            kinds = self._readings.get(digest)
            if kinds is None:
                return None
            self._touch(digest)
            found.extend(kinds)
        return found

    def _touch(self, digest: bytes) -> None:
        """Marks a reading recently used. A try, not ``contextlib.suppress``: this runs for
        every text of every request, and the context manager costs more than the move."""
        try:  # noqa: SIM105 (see above)
            self._readings.move_to_end(digest)
        except KeyError:  # dropped by the check's thread meanwhile
            pass

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)


def _retrieved(answer: asyncio.Future[list[str]]) -> None:
    """Mark an answer's error seen: a request that gave up never reads it."""
    if not answer.cancelled():
        answer.exception()
