"""Plain ASGI middleware, one concern each, composed by Starlette's fold (outermost first):
request id → access log → errors → authentication → rate limit."""

from __future__ import annotations

import logging
import time
import uuid

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hybridinfer.control.keys import KeyRing, Principal
from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.errors import HybridInferError, Unauthorized
from hybridinfer.observe.logs import request_context
from hybridinfer.server.responses import error_response, valid_request_id

log = logging.getLogger("hybridinfer.gateway")
access_log = logging.getLogger("hybridinfer.access")

PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/ui", "/openapi.json"})
# Signed object URLs carry their own HMAC authorisation (objectstore/filesystem.py); the
# dashboard's static files hold no data (its page sends a key to the JSON APIs).
PUBLIC_PREFIXES = ("/v1/objects/", "/ui/static/")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class RequestIdMiddleware:
    """Echo the caller's ``X-Request-ID`` (if well-formed) or make one; stamp arrival time;
    join the caller's trace (W3C ``traceparent``). Request and trace ids are put in context
    variables for log lines and outgoing calls."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        given = _header(scope, b"x-request-id")
        request_id = given if given is not None and valid_request_id(given) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        state.setdefault("started", started)  # the shedder's, when it ran first
        encoded = request_id.encode()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-request-id", encoded)]
            await send(message)

        with request_context(request_id, _header(scope, b"traceparent")):
            await self.app(scope, receive, send_with_id)


QUIET_PATHS = frozenset({"/healthz", "/readyz"})
"""Probed every few seconds by orchestrators: not worth a line each."""


class AccessLogMiddleware:
    """One ``hybridinfer.access`` line per request (method, path, status, duration); the
    request id comes from the context the request-id middleware set."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] in QUIET_PATHS
            or not access_log.isEnabledFor(logging.INFO)
        ):
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
            elapsed_ms = (time.perf_counter() - scope["state"]["started"]) * 1000.0
            access_log.info(
                "%s %s %d",
                scope["method"],
                scope["path"],
                status,
                extra={"status": status, "duration_ms": round(elapsed_ms, 3)},
            )


class ErrorMiddleware:
    """Render every error in the envelope; never a stack trace, never a 500 for bad input."""

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
        except ClientDisconnect:  # the caller gave up before we read its body: nobody to answer
            log.info("client went away", extra={"request_id": scope["state"]["request_id"]})
        except Exception as exc:
            request_id = scope["state"]["request_id"]
            if isinstance(exc, HybridInferError):
                error = exc
            else:
                log.exception("unhandled error", extra={"request_id": request_id})
                error = HybridInferError("internal error; see the server log for this request id")
            if response_started:  # too late for an envelope; the client sees a cut response
                return
            await error_response(error, request_id)(scope, receive, send)


class AuthMiddleware:
    """Bearer API keys on every path but the health probes; sets ``state["principal"]``."""

    def __init__(self, app: ASGIApp, keys: KeyRing) -> None:
        self.app = app
        self._keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
        if scope["type"] == "http" and not public:
            authorization = _header(scope, b"authorization")
            if authorization is None:
                raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'")
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthorized("malformed Authorization header: expected 'Bearer <key>'")
            principal: Principal = await self._keys.authenticate(token.strip())
            scope["state"]["principal"] = principal
        await self.app(scope, receive, send)


class RateLimitMiddleware:
    """Per-key request rate; 429 with ``Retry-After`` past it."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self._limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get("state", {}).get("principal")
        if scope["type"] == "http" and principal is not None:
            await self._limiter.check(principal.key_id, principal.rate_limit_per_minute)
        await self.app(scope, receive, send)


__all__ = [
    "AccessLogMiddleware",
    "AuthMiddleware",
    "ErrorMiddleware",
    "HybridInferError",
    "RateLimitMiddleware",
    "RequestIdMiddleware",
]
