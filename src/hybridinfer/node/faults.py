"""Fault injection for drills, as Envoy's fault filter does: added delay, aborted requests.

Faults apply to the Open Inference Protocol paths (``/v2/...``), probes included, so a drill
looks to the control plane like a slow or failing link. The delay applies to
``delay_percent`` of the requests (each drawn on its own), so a brownout, where some exchanges
are slow and most are not, can be drilled as well as a uniformly slow link. They are set
through the node's admin API (``/admin/faults``, node token required) and take effect on the
next request.
"""

from __future__ import annotations

import asyncio
import hmac
import random

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send


class Faults(BaseModel):
    """What to do to each matching request."""

    model_config = ConfigDict(extra="forbid")

    delay_ms: float = Field(0.0, ge=0.0, le=60_000.0)
    delay_percent: float = Field(100.0, ge=0.0, le=100.0, description="share of requests delayed")
    abort_percent: float = Field(0.0, ge=0.0, le=100.0)
    abort_status: int = Field(503, ge=400, le=599)


async def _send_json(send: Send, status: int, body: object) -> None:
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": payload})


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    more = True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


class FaultInjector:
    """ASGI middleware: serves ``/admin/faults`` and applies the faults to ``/v2`` paths."""

    def __init__(self, app: ASGIApp, token: str | None, rng: random.Random | None = None) -> None:
        self.app = app
        self._token = token
        self._rng = rng or random.Random()
        self.faults = Faults()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/admin/faults":
            await self._admin(scope, receive, send)
            return
        if path.startswith("/v2"):
            faults = self.faults
            delayed = faults.delay_percent >= 100.0 or (
                self._rng.uniform(0, 100) < faults.delay_percent
            )
            if faults.delay_ms and delayed:
                await asyncio.sleep(faults.delay_ms / 1000.0)
            if faults.abort_percent and self._rng.uniform(0, 100) < faults.abort_percent:
                await _send_json(send, faults.abort_status, {"error": "fault injected: abort"})
                return
        await self.app(scope, receive, send)

    def _authorised(self, scope: Scope) -> bool:
        if self._token is None:
            return False
        for key, value in scope["headers"]:
            if key == b"authorization":
                return hmac.compare_digest(value.decode("latin-1"), f"Bearer {self._token}")
        return False

    async def _admin(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._authorised(scope):
            await _send_json(send, 401, {"error": "the node token is required"})
            return
        method = scope["method"]
        if method == "GET":
            await _send_json(send, 200, self.faults.model_dump())
        elif method == "DELETE":
            self.faults = Faults()
            await _send_json(send, 200, self.faults.model_dump())
        elif method in ("PUT", "POST"):
            try:
                self.faults = Faults.model_validate(orjson.loads(await _read_body(receive)))
            except (orjson.JSONDecodeError, ValidationError) as exc:
                await _send_json(send, 400, {"error": f"invalid faults: {exc}"})
                return
            await _send_json(send, 200, self.faults.model_dump())
        else:
            await _send_json(send, 405, {"error": "use GET, PUT or DELETE"})
