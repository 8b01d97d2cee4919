"""The HTTP server of the gateway and the nodes: uvicorn, guarded against slow clients, with TLS.

uvicorn closes idle keep-alive connections but gives a client all the time it wants to send
its request headers; one that dribbles them a byte at a time (slowloris) would hold the
connection forever. ``GuardedProtocol`` answers 408 and closes a connection whose headers
are not complete ``header_timeout_s`` after its first byte (or after it opened). The body's
timeout is the application's (``gateway/responses.py:read_body``), so it ends in the usual
error envelope.

With TLS, the protocol also puts the verified client certificate's subject in the ASGI scope
(``scope["extensions"]["tls"]["client_cert_name"]``) for routes that require mutual TLS.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from hybridinfer.server.responses import new_request_id
from hybridinfer.server.shedding import Refusal
from hybridinfer.server.tls import server_options
from hybridinfer.settings import Settings


def timeout_response(request_id: str) -> bytes:
    """The 408 of a client whose headers were too slow: the error envelope and
    ``X-Request-ID``, like every other answer (no header was read, so the id is new)."""
    body = orjson.dumps(
        {
            "error": {
                "code": "request_timeout",
                "message": "the request headers did not arrive in time",
                "request_id": request_id,
            }
        }
    )
    head = (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"x-request-id: %s\r\nconnection: close\r\ncontent-length: %d\r\n\r\n"
        % (request_id.encode(), len(body))
    )
    return head + body


def _subject(certificate: dict[str, Any]) -> str:
    """``CN=node-1,O=Example`` from ``ssl.getpeercert()``'s nested tuples."""
    parts = [f"{name}={value}" for rdn in certificate.get("subject", ()) for name, value in rdn]
    return ",".join(parts) or "verified"


class _ClientCertificate:
    """Adds the connection's verified client certificate to each request's scope."""

    def __init__(self, app: Any, name: str) -> None:
        self.app = app
        self.name = name

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        extensions = scope.setdefault("extensions", {})
        extensions["tls"] = {"client_cert_name": self.name, "client_cert_error": None}
        await self.app(scope, receive, send)


class _HeadWithBody:
    """A cycle's transport that holds a response's head until its body, to send both in one
    write: uvicorn writes them apart, two sends for every answer (and two reads for the
    client). Only a head with a ``content-length`` is held (its body follows at once); a
    streamed answer's head goes out as soon as it is written. Everything else passes through."""

    __slots__ = ("_head", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        head, self._head = self._head, None
        if head is not None:
            self._transport.write(head + data)
        elif data.startswith(b"HTTP/") and data.endswith(b"\r\n\r\n") and _LENGTH in data:
            self._head = data
        else:
            self._transport.write(data)

    def close(self) -> None:
        if self._head is not None:  # the app failed between head and body: as uvicorn would
            self._transport.write(self._head)
            self._head = None
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


_LENGTH = b"\r\ncontent-length: "
_STATUS_503 = b"HTTP/1.1 503 Service Unavailable\r\n"


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol (its fast C parser) plus a request-header read timeout:
    408, then close."""

    header_timeout_s = 10.0
    refuse_now: Callable[[Any], Refusal | None] | None = None
    """An inference request's 503 if it is refused at once (``LoadShedder.refuse_now``)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm()  # a connection that opens and sends nothing is a slow client too
        certificate = transport.get_extra_info("peercert")
        if certificate:  # only a certificate that verified against the CA is reported
            self.app = _ClientCertificate(self.app, _subject(certificate))

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def on_message_begin(self) -> None:
        """The first byte of a request: its headers must be complete in time."""
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if self.refuse_now is not None:
            refusal = self.refuse_now(cycle.scope)
            if refusal is not None:
                self._answer_at_once(cycle, refusal)
                return
        if cycle.scope["method"] != "HEAD":  # a HEAD answer has no body to carry its head
            cycle.transport = _HeadWithBody(cycle.transport)
        super()._start_asgi_task(cycle, app)

    def _answer_at_once(self, cycle: Any, refusal: Refusal) -> None:
        """Write a 503 for ``cycle`` in one write, with no ASGI task: the cycle is complete,
        so its body, read later, is dropped (as uvicorn drops it after any full answer) and
        the next request on the connection is read as usual."""
        headers, body = refusal
        keep_alive = cycle.keep_alive
        lines = [
            b"%s: %s\r\n" % header for header in (*self.server_state.default_headers, *headers)
        ]
        close = b"" if keep_alive else b"connection: close\r\n"
        self.transport.write(b"".join((_STATUS_503, *lines, close, b"\r\n", body)))
        cycle.response_started = cycle.response_complete = True
        if not keep_alive:
            self.transport.close()
        self.on_response_complete()

    def on_response_complete(self) -> None:
        """Between requests the keep-alive timeout, not this one, closes an idle connection."""
        super().on_response_complete()
        self._disarm()

    def _headers_late(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.write(timeout_response(new_request_id()))
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def guarded_protocol(
    header_timeout_s: float = 10.0, refuse_now: Callable[[Any], Refusal | None] | None = None
) -> type[GuardedProtocol]:
    """The guarded protocol with its header timeout and, given ``refuse_now``, refusing what
    that refuses before the app runs."""
    early = None if refuse_now is None else staticmethod(refuse_now)
    return type(
        "GuardedProtocol",
        (GuardedProtocol,),
        {"header_timeout_s": header_timeout_s, "refuse_now": early},
    )


def server_config(
    app: Any,
    host: str,
    port: int,
    *,
    protocol: type[GuardedProtocol] = GuardedProtocol,
    tls_cert_file: Path | None = None,
    tls_key_file: Path | None = None,
    tls_ca_file: Path | None = None,
    require_client_cert: bool = False,
    **options: Any,
) -> uvicorn.Config:
    """A uvicorn config with the guarded ``protocol`` (``guarded_protocol``) and, given a
    certificate, TLS."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        log_level="warning",
        access_log=False,
        log_config=None,  # uvicorn's loggers go through the process's handler (logs.py)
        **server_options(tls_cert_file, tls_key_file, tls_ca_file, require_client_cert),
        # uvicorn's X-Forwarded-* rewrite of the client address and scheme is a layer every
        # request pays for, and nothing here reads either (bench/frontdoor.py measures it).
        **{"proxy_headers": False, **options},
    )


def gateway_server_config(
    app: Any,
    settings: Settings,
    refuse_now: Callable[[Any], Refusal | None] | None = None,
    **options: Any,
) -> uvicorn.Config:
    """The gateway's uvicorn config from its settings (address, slow-client guard, backlog,
    TLS and mutual TLS for node routes), refusing with ``refuse_now`` (``FrontDoor``'s) before
    the app; ``options`` go to uvicorn."""
    return server_config(
        app,
        settings.host,
        settings.port,
        protocol=guarded_protocol(settings.header_timeout_s, refuse_now),
        backlog=settings.listen_backlog,
        tls_cert_file=settings.tls_cert_file,
        tls_key_file=settings.tls_key_file,
        tls_ca_file=settings.tls_ca_file if settings.node_mtls else None,
        lifespan="on",
        **options,
    )


def client_certificate(scope: Any) -> str | None:
    """The subject of the request's verified TLS client certificate, if it presented one."""
    tls = scope.get("extensions", {}).get("tls") or {}
    name = tls.get("client_cert_name")
    return str(name) if name else None
