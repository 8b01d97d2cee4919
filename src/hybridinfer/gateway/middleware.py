"""The gateway's front-door concerns, one small function each: request id, access log, the
error envelope, authentication and the per-key rate limit.

``gateway/frontdoor.py`` calls them in order from one ASGI callable (the served gateway). The
classes below wrap each alone as a plain ASGI layer, composable by a fold (house rule 6), for
an app that wants one concern without the rest and for measuring one concern's own cost
(``bench/frontdoor.py``); they hold no logic of their own.
"""

from __future__ import annotations

import logging
import time
from contextlib import AbstractContextManager

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hybridinfer.control.keys import KeyRing, Principal
from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.core.tracecontext import TraceContext
from hybridinfer.errors import HybridInferError, MethodNotAllowed, NotFound, Unauthorized
from hybridinfer.observe.logs import request_context
from hybridinfer.server.responses import (
    error_response,
    new_request_id,
    request_header,
    valid_request_id,
)

log = logging.getLogger("hybridinfer.gateway")
ACCESS_LOGGER = "hybridinfer.access"
access_log = logging.getLogger(ACCESS_LOGGER)

PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/ui", "/openapi.json"})
# Signed object URLs carry their own HMAC authorisation (objectstore/filesystem.py); the
# dashboard's static files hold no data (its page sends a key to the JSON APIs).
PUBLIC_PREFIXES = ("/v1/objects/", "/ui/static/")
QUIET_PATHS = frozenset({"/healthz", "/readyz"})
"""Probed every few seconds by orchestrators: not worth an access line each."""


def assign_request_id(scope: Scope) -> str:
    """Echo the caller's ``X-Request-ID`` (if well-formed) or make one; stamp arrival time
    (unless the shedder already did, before the request's wait for a slot)."""
    started = time.perf_counter()
    given = request_header(scope, b"x-request-id")
    request_id = given if given is not None and valid_request_id(given) else new_request_id()
    state = scope.setdefault("state", {})
    state["request_id"] = request_id
    state.setdefault("started", started)
    return request_id


def request_scope(scope: Scope, request_id: str) -> AbstractContextManager[TraceContext]:
    """Request and trace ids (the caller's W3C ``traceparent`` joined) in context variables
    for log lines and outgoing calls."""
    return request_context(request_id, request_header(scope, b"traceparent"))


def stamp_request_id(message: Message, encoded: bytes) -> None:
    """Add ``X-Request-ID`` to a response's start message."""
    message["headers"] = [*message.get("headers", []), (b"x-request-id", encoded)]


def access_logged(scope: Scope) -> bool:
    """Whether this request gets an access line (not the probes; only with INFO on)."""
    return scope["path"] not in QUIET_PATHS and access_log.isEnabledFor(logging.INFO)


def log_access(scope: Scope, status: int) -> None:
    """One ``hybridinfer.access`` line (method, path, status, duration); the request id comes
    from the context ``request_scope`` set."""
    elapsed_ms = (time.perf_counter() - scope["state"]["started"]) * 1000.0
    # The record built here and handed to the logger's handlers, as ``access_log.info`` would
    # after looking up its caller's frame (this function: its file is given instead) and
    # copying ``extra`` in: a third of the line's cost, on every request.
    record = logging.LogRecord(
        ACCESS_LOGGER, logging.INFO, __file__, 0, "%s %s %d",
        (scope["method"], scope["path"], status), None, "log_access",
    )  # fmt: skip
    record.status = status
    record.duration_ms = round(elapsed_ms, 3)
    access_log.handle(record)


def envelope_for(exc: Exception, scope: Scope) -> HybridInferError | None:
    """The error to render for ``exc`` (None: nobody to answer); logs what a caller must not
    see. Never a stack trace, never a 500 for bad input."""
    request_id = scope["state"]["request_id"]
    if isinstance(exc, ClientDisconnect):  # the caller gave up before we read its body
        log.info("client went away", extra={"request_id": request_id})
        return None
    if isinstance(exc, HybridInferError):
        return exc
    if isinstance(exc, HTTPException):  # the router's own: no route, or not this method
        if exc.status_code == 405:
            return MethodNotAllowed(f"{scope['method']} is not allowed on {scope['path']}")
        return NotFound(f"no route {scope['path']}")
    log.exception("unhandled error", extra={"request_id": request_id})
    return HybridInferError("internal error; see the server log for this request id")


async def authenticate(scope: Scope, keys: KeyRing) -> None:
    """Bearer API keys on every path but the public ones; sets ``state["principal"]``."""
    path = scope["path"]
    if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
        return
    authorization = request_header(scope, b"authorization")
    if authorization is None:
        raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("malformed Authorization header: expected 'Bearer <key>'")
    principal: Principal = await keys.authenticate(token.strip())
    scope["state"]["principal"] = principal


async def check_rate(scope: Scope, limiter: RateLimiter) -> None:
    """Per-key request rate; 429 with ``Retry-After`` past it."""
    principal = scope.get("state", {}).get("principal")
    if principal is not None:
        await limiter.check(principal.key_id, principal.rate_limit_per_minute)


class RequestIdMiddleware:
    """``assign_request_id`` and ``request_scope`` as one layer; stamps the response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = assign_request_id(scope)
        encoded = request_id.encode()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                stamp_request_id(message, encoded)
            await send(message)

        with request_scope(scope, request_id):
            await self.app(scope, receive, send_with_id)


class AccessLogMiddleware:
    """``log_access`` as one layer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access_logged(scope):
            await self.app(scope, receive, send)
            return
        status = 0

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            log_access(scope, status)


class ErrorMiddleware:
    """``envelope_for`` as one layer: every error rendered in the envelope."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response_started = False

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            error = envelope_for(exc, scope)
            if error is not None and not response_started:  # else too late: a cut response
                await error_response(error, scope["state"]["request_id"])(scope, receive, send)


class AuthMiddleware:
    """``authenticate`` as one layer."""

    def __init__(self, app: ASGIApp, keys: KeyRing) -> None:
        self.app = app
        self._keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await authenticate(scope, self._keys)
        await self.app(scope, receive, send)


class RateLimitMiddleware:
    """``check_rate`` as one layer."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self._limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await check_rate(scope, self._limiter)
        await self.app(scope, receive, send)


__all__ = [
    "AccessLogMiddleware",
    "AuthMiddleware",
    "ErrorMiddleware",
    "HybridInferError",
    "RateLimitMiddleware",
    "RequestIdMiddleware",
]
