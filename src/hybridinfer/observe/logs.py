"""Log lines that carry the request id: one JSON object per line (default) or plain text.

Stdlib logging throughout. The gateway's front door (its request-id step) puts the request id
(and the trace id) in context variables; a filter on the handler copies them onto every record
logged while that request is served, so any module's ``log.info(...)`` is tied to its request
without passing ids around.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

import orjson

from hybridinfer.core.tracecontext import CURRENT, TraceContext, new_context
from hybridinfer.privacy.scrub import scrub

REQUEST_ID: ContextVar[str | None] = ContextVar("hybridinfer_request_id", default=None)
"""The id of the request being served (set by the gateway's front door)."""

LogFormat = Literal["json", "text"]


@contextmanager
def request_context(request_id: str, traceparent: str | None = None) -> Iterator[TraceContext]:
    """Serve one request (an HTTP call, an async task) inside this block: its log lines carry
    ``request_id`` and its trace id; it joins the caller's trace when ``traceparent`` is valid;
    HTTP backends forward the trace to nodes."""
    context = new_context(traceparent)
    request_token = REQUEST_ID.set(request_id)
    context_token = CURRENT.set(context)
    try:
        yield context
    finally:
        CURRENT.reset(context_token)
        REQUEST_ID.reset(request_token)


# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "request_id",
    "trace_id",
}


class RequestContextFilter(logging.Filter):
    """Stamps ``request_id`` and ``trace_id`` on each record (an explicit ``extra`` wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = REQUEST_ID.get()
        if request_id is not None and getattr(record, "request_id", None) is None:
            record.request_id = request_id
        context = CURRENT.get()
        if context is not None and getattr(record, "trace_id", None) is None:
            record.trace_id = context.trace_id_hex
        return True


class ScrubFilter(logging.Filter):
    """Warnings, errors and exceptions may quote what a request carried (an upstream's echo, a
    value in an exception's message): their text passes through ``privacy.scrub`` first, so a
    log line names the kind of a personal value, never the value. Info lines are the access
    log and state changes, and are left as they are (scrubbing them would cost every request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or record.exc_info:
            record.msg, record.args = scrub(record.getMessage()), None
            if record.exc_info and not record.exc_text:
                text = "".join(traceback.format_exception(*record.exc_info))
                record.exc_text = scrub(text.rstrip("\n"))
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request and trace ids, extras,
    and the exception (type, message, traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in ("request_id", "trace_id"):
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        record_fields = record.__dict__
        for name in sorted(record_fields.keys() - _STANDARD):  # extras, in one fixed order
            line[name] = record_fields[name]
        if record.exc_info:
            line["exception"] = record.exc_text or self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"


def configure_logging(
    level: str, log_format: LogFormat = "json", stream: TextIO | None = None
) -> None:
    """Send every logger (uvicorn's too) to one handler on ``stream`` (stderr by default)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(RequestContextFilter())
    handler.addFilter(ScrubFilter())
    text = logging.Formatter(TEXT_FORMAT, defaults={"request_id": "-"})
    handler.setFormatter(JsonFormatter() if log_format == "json" else text)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Neither format names a thread or a process: every record (one per request, the access
    # line) need not look them up (the logging HOWTO's "Optimization").
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
