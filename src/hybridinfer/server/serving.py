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
import gc
from pathlib import Path
from typing import Any

import orjson
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from hybridinfer.server.responses import new_request_id
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


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol (its fast C parser) plus a request-header read timeout:
    408, then close."""

    header_timeout_s = 10.0

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
        if cycle.scope["method"] != "HEAD":  # a HEAD answer has no body to carry its head
            cycle.transport = _HeadWithBody(cycle.transport)
        super()._start_asgi_task(cycle, app)

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


def server_config(
    app: Any,
    host: str,
    port: int,
    *,
    header_timeout_s: float = 10.0,
    tls_cert_file: Path | None = None,
    tls_key_file: Path | None = None,
    tls_ca_file: Path | None = None,
    require_client_cert: bool = False,
    **options: Any,
) -> uvicorn.Config:
    """A uvicorn config with the guarded protocol and, given a certificate, TLS."""
    protocol = type("GuardedProtocol", (GuardedProtocol,), {"header_timeout_s": header_timeout_s})
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


def gateway_server_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """The gateway's uvicorn config from its settings (address, slow-client guard, backlog,
    TLS and mutual TLS for node routes); ``options`` go to uvicorn."""
    return server_config(
        app,
        settings.host,
        settings.port,
        header_timeout_s=settings.header_timeout_s,
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


YOUNG_COLLECTION_THRESHOLD = 10_000
"""Container objects made (less those freed) between two collections of the youngest
generation (a node's; the gateway's is its setting ``gc_young_threshold``); Python's default
is 700."""


def freeze_startup_heap(young_threshold: int = YOUNG_COLLECTION_THRESHOLD) -> None:
    """Put every object alive once a server has started (modules, models, the app) out of the
    cyclic garbage collector's reach, and collect the young generation less often.

    A full collection in a started gateway walks about 130,000 such objects, 75 ms on this
    machine, a pause that lands on every request in flight; after the freeze only objects made
    since are walked. Start-up objects are not garbage, so nothing is lost by not walking them.

    At Python's default threshold (700) the requests in flight alone hold enough new objects
    to cross it again and again: at 700 pinned chats a second, 166-397 young collections, 15-36
    middle ones and 1-3 full ones every 15 s, 10-34 µs of collector time a request (a full one
    10-25 ms, a stall of the loop). At ``YOUNG_COLLECTION_THRESHOLD``, 4-6 young collections
    and none older in the same runs, 1-4 µs a request (three runs each way, alternating, on 2
    cores). The garbage a request leaves in cycles waits a little longer to be freed: a few
    thousand objects at most. ``bench/loop_stalls.py`` runs a gateway at each threshold side by
    side.

    For server processes only (``hybridinfer gateway``, ``up``, ``node``), not for a gateway
    embedded in another program, whose heap is not ours to freeze.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(young_threshold, *gc.get_threshold()[1:])
