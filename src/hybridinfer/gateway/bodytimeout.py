"""The request body must arrive within ``timeout_s`` of the request's start (else 408).

A client that sends its headers and then dribbles the body would hold a handler (and its
memory) for as long as it likes; here each wait for the next body chunk is bounded by what is
left of the allowance. The 408 goes out in the error envelope with ``Connection: close``.
Once the body is complete, waits (a streaming response listening for the disconnect) are
not bounded.
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hybridinfer.errors import RequestTimeout


def bound_body(receive: Receive, timeout_s: float) -> Receive:
    """``receive`` whose body chunks must all arrive within ``timeout_s`` from now."""
    deadline = time.monotonic() + timeout_s
    body_done = False

    async def bounded_receive() -> Message:
        nonlocal body_done
        if body_done:
            return await receive()
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                message = await receive()
        except TimeoutError:
            raise RequestTimeout(
                f"the request body did not arrive within {timeout_s:g} s"
            ) from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            body_done = True
        return message

    return bounded_receive


class BodyTimeoutMiddleware:
    """``bound_body`` as one ASGI layer (the gateway's front door calls it directly)."""

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self._timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, bound_body(receive, self._timeout_s), send)
