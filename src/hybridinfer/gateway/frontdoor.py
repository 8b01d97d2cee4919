"""The gateway's front door: one ASGI callable between the server and the router.

In order, what the middleware chain did: load shedding (``server/shedding.py``; a refusal is
answered there and nothing else runs) → request id → access log → error envelope → body
deadline (``gateway/bodytimeout.py``) → authentication (the key ring's cache) → per-key rate
limit (``gateway/middleware.py``) → the router. Each concern stays one small function in its
own module; only their composition is here.

Why one callable and not a fold of middleware (house rule 6 gives way here): every request pays
for every layer, and as a chain each layer was a call frame, a coroutine and a ``scope``
lookup, and three of them wrapped ``send`` again; with Starlette's own
``ServerErrorMiddleware`` and ``ExceptionMiddleware`` around and inside, a response message
passed five wrappers before the server saw it, and the router ran twelve frames below uvicorn's
call. Here it runs three below this callable's caller and every response message passes one
``send`` wrapper, which stamps the request id and notes the status for the access line and for
the envelope (too late for one once a response has started). Starlette's pair is not needed:
the envelope catches everything, the router's ``HTTPException`` (no route, wrong method)
included (``middleware.envelope_for``), so no request ever gets a stack trace or a plain-text
500. ``bench/frontdoor.py`` measures the difference (``docs/architecture.md`` gives it). The
layer classes in ``middleware.py`` remain for any app that wants one concern alone.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hybridinfer.control.keys import KeyRing
from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.gateway.bodytimeout import bound_body
from hybridinfer.gateway.middleware import (
    access_logged,
    assign_request_id,
    authenticate,
    check_rate,
    envelope_for,
    log_access,
    request_scope,
    stamp_request_id,
)
from hybridinfer.server.responses import error_response
from hybridinfer.server.shedding import GatewayLoad, LoadShedder, Refusal


class FrontDoor:
    """Shed, identify, log, guard and limit each HTTP request, then hand it to ``app``;
    other scopes (lifespan) go straight through."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        load: GatewayLoad,
        keys: KeyRing,
        limiter: RateLimiter,
        body_timeout_s: float,
    ) -> None:
        self.app = app
        self._shedder = LoadShedder(app, load)  # its refusal and the refusals' log line
        self._keys = keys
        self._limiter = limiter
        self._body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._shedder.sheds(scope):
            await self._serve(scope, receive, send)
            return
        entered = await self._shedder.enter(scope, send)
        if entered is None:  # refused, and answered
            return
        try:
            await self._serve(scope, receive, send)
        finally:
            self._shedder.leave(entered)

    def refuse_now(self, scope: Scope) -> Refusal | None:
        """An inference request's 503 if it is refused without waiting, else None: for the
        server's protocol, which then answers it before any of this runs."""
        return self._shedder.refuse_now(scope)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_id = assign_request_id(scope)
        encoded = request_id.encode()
        status = 0

        async def send_once(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                stamp_request_id(message, encoded)
            await send(message)

        logged = access_logged(scope)
        with request_scope(scope, request_id):
            try:
                bounded = bound_body(receive, self._body_timeout_s)  # the clock runs from here
                try:
                    await authenticate(scope, self._keys)
                    await check_rate(scope, self._limiter)
                    await self.app(scope, bounded, send_once)
                except Exception as exc:
                    error = envelope_for(exc, scope)
                    if error is not None and status == 0:  # else too late: a cut response
                        await error_response(error, request_id)(scope, receive, send_once)
            finally:
                if logged:
                    log_access(scope, status)
