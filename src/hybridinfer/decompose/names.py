"""Names and places in a request's inputs, read with the NER model only when asked.

The model costs ~7 ms a text, so nothing reads names at decompose: the privacy gate asks just
before a subtask's inputs would leave the private zone (``execute/gate.py``). Calls run on one
thread of their own, off the event loop, each bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

from hybridinfer.decompose.privacy import strings_in
from hybridinfer.privacy.findings import Finding

FindNames = Callable[[str], list[Finding]]


class NameCheck:
    """Answers whether a value holds a name or a place; raises when it cannot tell."""

    def __init__(self, find: FindNames | None) -> None:
        """``find``: the model's finder (``NameFinder.find``), or None when it is absent."""
        self._find = find
        self._thread = concurrent.futures.ThreadPoolExecutor(1, "hybridinfer-names")

    @property
    def available(self) -> bool:
        return self._find is not None

    async def kinds_in(self, value: Any, timeout_s: float) -> list[str]:
        """The kinds of the names and places in every string of ``value`` (empty: none).

        Raises ``LookupError`` without a model and ``TimeoutError`` past ``timeout_s``; any
        error of the model itself propagates: the caller fails closed.
        """
        find = self._find
        if find is None:
            raise LookupError("no name finder is installed (the `ner` extra)")
        texts = [text for text in strings_in(value) if text.strip()]
        loop = asyncio.get_running_loop()

        def read() -> list[str]:
            return [finding.kind for text in texts for finding in find(text)]

        return await asyncio.wait_for(loop.run_in_executor(self._thread, read), timeout_s)

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
