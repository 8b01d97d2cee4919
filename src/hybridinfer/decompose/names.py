"""Names and places in a request's inputs, read with the NER model only when asked.

The model costs ~7 ms a text, so nothing reads names at decompose: the privacy gate asks just
before a subtask's inputs would leave the private zone (``execute/gate.py``). Reading runs on
one thread of its own, off the event loop. Loading the model takes seconds; ``warm`` starts it
when the process starts, and a request that needs names meanwhile waits for it within its own
deadline; reading itself is bounded by the policy's ``names_timeout_ms``.

A chat resends its whole conversation with every turn, and a system prompt rides on every
request: what one text holds is remembered, per process, by its BLAKE2b digest (the kinds
found, never the text or the names), so each message is read once, not once per turn.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import time
from collections import OrderedDict
from typing import Any, Protocol

from hybridinfer.decompose.privacy import strings_in
from hybridinfer.privacy.findings import Finding


class Finder(Protocol):
    """What the check needs of a name finder (``privacy.ner.NameFinder``)."""

    def load(self) -> None: ...

    def find(self, text: str) -> list[Finding]: ...


class Work(Protocol):
    """What runs with the finder on the check's thread (``NameCheck.run``)."""

    def __call__(self, finder: Finder) -> Any: ...


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class NameCheck:
    """Answers which names and places a value holds; raises when it cannot tell."""

    def __init__(self, finder: Finder | None, remembered: int = 4096) -> None:
        """``finder``: the model's finder, or None when it is configured but not installed
        (every reading then fails, and the gate fails closed). ``remembered``: how many texts'
        readings are kept (least recently used dropped first; 0 keeps none)."""
        self._finder = finder
        self._thread = concurrent.futures.ThreadPoolExecutor(1, "hybridinfer-names")
        self._loaded: concurrent.futures.Future[None] | None = None
        self._remembered = remembered
        self._readings: OrderedDict[bytes, list[str]] = OrderedDict()
        """Digest of a text → the kinds in it. Written only on the check's one thread; the
        caller's thread looks up and refreshes entries (each one C call, atomic under the GIL)
        so a request whose texts were all read before does not wait for the thread."""
        self.reads = 0
        """Texts the model actually read (the rest were remembered)."""

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded, or could not be (reads then fail closed at once)."""
        return self._finder is None or (self._loaded is not None and self._loaded.done())

    def warm(self) -> None:
        """Start loading the model on the check's thread (returns at once)."""
        if self._finder is not None and self._loaded is None:
            self._loaded = self._thread.submit(self._finder.load)

    async def run(self, work: Work, timeout_s: float, deadline: float) -> Any:
        """``work(finder)`` on the check's thread (pseudonymising needs the names' spans, not
        only their kinds), under the loading and time bounds of ``kinds_in``, raising as it
        does."""
        finder = self._finder
        if finder is None:
            raise LookupError("no name finder is installed (the `ner` extra)")
        self.warm()
        assert self._loaded is not None
        await asyncio.wait_for(asyncio.wrap_future(self._loaded), deadline - time.monotonic())
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(loop.run_in_executor(self._thread, work, finder), timeout_s)

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

        def read(finder: Finder) -> list[str]:
            return [kind for text in texts for kind in self._kinds(finder, text)]

        kinds: list[str] = await self.run(read, timeout_s, deadline)
        return kinds

    def _remembered_kinds(self, texts: list[str]) -> list[str] | None:
        """The kinds in ``texts`` if every one was read before, on the caller's thread (the
        hop to the check's thread, ~0.1-0.2 ms of CPU, is what a repeated system prompt or a
        resent conversation would otherwise pay); None if any text is new or no model is
        loaded (then ``kinds_in`` reads, waits or fails as it always did)."""
        if self._finder is None or not self._remembered or not self.loaded:
            return None
        found: list[str] = []
        for text in texts:
            digest = _digest(text)
            kinds = self._readings.get(digest)
            if kinds is None:
                return None
            with contextlib.suppress(KeyError):  # dropped by the check's thread meanwhile
                self._readings.move_to_end(digest)
            found.extend(kinds)
        return found

    def _kinds(self, finder: Finder, text: str) -> list[str]:
        """The kinds of the names in one text, remembered by its digest (on the check's thread:
        a reading that raises is not remembered, so the next request fails closed too)."""
        digest = _digest(text)
        kinds = self._readings.get(digest)
        if kinds is not None:
            self._readings.move_to_end(digest)
            return kinds
        kinds = [finding.kind for finding in finder.find(text)]
        self.reads += 1
        if self._remembered:
            self._readings[digest] = kinds
            if len(self._readings) > self._remembered:
                self._readings.popitem(last=False)
        return kinds

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
