"""Answer reuse on the request path: ``Cache-Control`` read into the request's options, and
the ``X-Hybridinfer-Cache`` header of an answer."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from hybridinfer.core.schemas import InferRequest
from hybridinfer.server.responses import request_header

CACHE_HEADER = "X-Hybridinfer-Cache"
"""``hit``, ``semantic;similarity=0.97`` or ``miss``."""


def with_cache_control(body: InferRequest, request: Request) -> InferRequest:
    """``Cache-Control: no-store`` turns reuse off, ``no-cache`` refreshes (a body's own
    ``cache`` option other than ``auto`` stands)."""
    header = (request_header(request.scope, b"cache-control") or "").lower()
    if not header:
        return body
    directives = {part.strip().split("=", 1)[0] for part in header.split(",")}
    mode = "off" if "no-store" in directives else "refresh" if "no-cache" in directives else None
    if mode is None or body.options.cache != "auto":
        return body
    options = body.options.model_copy(update={"cache": mode})
    return body.model_copy(update={"options": options})


def cache_header(result: dict[str, Any]) -> dict[str, str]:
    """The ``X-Hybridinfer-Cache`` header: ``miss`` when no subtask reused an answer,
    ``semantic;similarity=…`` (the lowest) when one reused a similar prompt's, else ``hit``.
    Steps that are never reused (redaction, restoring values) do not count; the response's
    ``subtasks`` say which steps reused what."""
    reused = [s["reused"] for s in result.get("subtasks") or [] if s.get("reused")]
    if not reused:
        return {CACHE_HEADER: "miss"}
    semantic = [r["similarity"] for r in reused if r["kind"] == "semantic"]
    if semantic:
        return {CACHE_HEADER: f"semantic;similarity={min(semantic):.2f}"}
    return {CACHE_HEADER: "hit"}
