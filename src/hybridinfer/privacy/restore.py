"""Putting values back into an answer that arrives piece by piece.

A placeholder may be split across pieces (``<EMA`` | ``IL_1>``). ``StreamRestorer`` passes
every piece on at once except the tail that may still grow into a placeholder
(``placeholders.held_back``), which waits for the next piece; so nothing but a possible
placeholder is ever held, and never longer than until it is whole or plainly is not one.
``AnswerRestorer`` does this for a chat answer's pieces: the text, and each tool call's
name and arguments (values JSON-escaped there).
"""

from __future__ import annotations

from typing import Any

from hybridinfer.privacy.placeholders import held_back
from hybridinfer.privacy.pseudonym import Pseudonymiser


class StreamRestorer:
    """One stream of text: ``feed`` each piece, ``flush`` at the end."""

    __slots__ = ("_json_text", "_mapping", "_pending")

    def __init__(self, mapping: Pseudonymiser, json_text: bool = False) -> None:
        self._mapping = mapping
        self._json_text = json_text
        self._pending = ""

    @property
    def holding(self) -> int:
        """How many characters are held back now."""
        return len(self._pending)

    def feed(self, piece: str) -> str:
        """The text that can be passed on now, values restored."""
        text = self._pending + piece if self._pending else piece
        cut = held_back(text)
        self._pending = text[cut:]
        return self._mapping.restore_text(text[:cut], self._json_text) if cut else ""

    def flush(self) -> str:
        """What is still held (the stream ended), restored."""
        text, self._pending = self._pending, ""
        return self._mapping.restore_text(text, self._json_text) if text else ""


class AnswerRestorer:
    """A chat answer's pieces (``{"delta": {...}, "finish_reason", "usage"}``) restored."""

    def __init__(self, mapping: Pseudonymiser) -> None:
        self._mapping = mapping
        self._content = StreamRestorer(mapping)
        self._tools: dict[tuple[int, str], StreamRestorer] = {}

    def piece(self, piece: dict[str, Any]) -> dict[str, Any] | None:
        """``piece`` restored, or None when all it carried is held back for now. The piece
        that says how the answer finished carries whatever was still held."""
        delta = dict(piece.get("delta") or {})
        finishing = piece.get("finish_reason") is not None
        carried = "content" in delta and bool(delta["content"])
        if isinstance(delta.get("content"), str):
            delta["content"] = self._content.feed(delta["content"])
        if isinstance(delta.get("tool_calls"), list):
            delta["tool_calls"] = [self._tool_call(call) for call in delta["tool_calls"]]
        if finishing:
            rest = self._content.flush()
            if rest:
                delta["content"] = (delta.get("content") or "") + rest
            self._flush_tools(delta)
        restored = {**piece, "delta": delta}
        held = carried and not delta.get("content") and len(delta) == 1
        if held and not finishing and not piece.get("usage"):
            return None
        return restored

    def finish(self) -> str:
        """The text still held when the answer ended without saying how it finished."""
        return self._content.flush()

    def _tool_call(self, call: Any) -> Any:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            return call
        index = call.get("index", 0) if isinstance(call.get("index", 0), int) else 0
        function = dict(call["function"])
        for field in ("name", "arguments"):
            if isinstance(function.get(field), str):
                stream = self._tools.setdefault(
                    (index, field), StreamRestorer(self._mapping, json_text=field == "arguments")
                )
                function[field] = stream.feed(function[field])
        return {**call, "function": function}

    def _flush_tools(self, delta: dict[str, Any]) -> None:
        """Held tool-call text goes out with the finishing piece, one entry per call."""
        calls: dict[int, dict[str, str]] = {}
        for (index, field), stream in sorted(self._tools.items()):
            rest = stream.flush()
            if rest:
                calls.setdefault(index, {})[field] = rest
        if calls:
            extra = [{"index": index, "function": parts} for index, parts in calls.items()]
            delta["tool_calls"] = [*(delta.get("tool_calls") or []), *extra]
