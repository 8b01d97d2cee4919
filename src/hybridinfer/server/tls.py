"""TLS between the tiers: server options for uvicorn, client contexts for aiohttp and channel
credentials for gRPC.

Certificates, keys and CA bundles come from files (mounted secrets). A server presents its
certificate; with a CA bundle it also verifies the client certificates callers present
(``CERT_OPTIONAL``: API clients need none, but a certificate that does not chain to the CA
fails the handshake). Whether a route *requires* one is the application's decision: the
protocol puts the verified certificate's subject in the ASGI scope (``serving.py``), and the
gateway's node routes demand it when ``node_mtls`` is on. A node started with
``tls_require_client_cert`` accepts no connection without one (``CERT_REQUIRED``): only a
gateway holding a certificate from the CA can call its models.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from hybridinfer.errors import ConfigError

if TYPE_CHECKING:
    from hybridinfer.settings import Settings


def _readable(*paths: Path | None) -> None:
    for path in paths:
        if path is not None and not path.is_file():
            raise ConfigError(f"TLS file {path} does not exist or is not a file")


def server_options(
    cert_file: Path | None,
    key_file: Path | None,
    ca_file: Path | None = None,
    require_client_cert: bool = False,
) -> dict[str, Any]:
    """uvicorn.Config keyword arguments: empty (plain HTTP) without a certificate.

    With ``ca_file``, client certificates are verified against it: optional, or required
    (no handshake without one) with ``require_client_cert``."""
    if cert_file is None or key_file is None:
        return {}
    _readable(cert_file, key_file, ca_file)
    options: dict[str, Any] = {"ssl_certfile": str(cert_file), "ssl_keyfile": str(key_file)}
    if ca_file is not None:
        options["ssl_ca_certs"] = str(ca_file)
        options["ssl_cert_reqs"] = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    return options


def client_context(
    ca_file: Path | None, cert_file: Path | None = None, key_file: Path | None = None
) -> ssl.SSLContext:
    """Verifies servers against ``ca_file`` (else the system's CAs); presents ``cert_file``
    as the client certificate when given (mutual TLS)."""
    _readable(ca_file, cert_file, key_file)
    context = ssl.create_default_context(cafile=str(ca_file) if ca_file is not None else None)
    if cert_file is not None:
        try:
            context.load_cert_chain(str(cert_file), str(key_file) if key_file else None)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"cannot load client certificate {cert_file}: {exc}") from None
    return context


def node_client_context(settings: Settings) -> ssl.SSLContext | None:
    """How the gateway calls nodes: None (the system's CAs) unless a CA or client
    certificate is configured."""
    if settings.tls_ca_file is None and settings.tls_client_cert_file is None:
        return None
    return client_context(
        settings.tls_ca_file, settings.tls_client_cert_file, settings.tls_client_key_file
    )


def _pem(path: Path | None) -> bytes | None:
    if path is None:
        return None
    _readable(path)
    return path.read_bytes()


def node_grpc_credentials(settings: Settings) -> grpc.ChannelCredentials | None:
    """How the gateway calls nodes over gRPC (``grpcs://``), from the same files as
    ``node_client_context``: None (the system's CAs, no client certificate) unless set."""
    if settings.tls_ca_file is None and settings.tls_client_cert_file is None:
        return None
    return grpc.ssl_channel_credentials(
        root_certificates=_pem(settings.tls_ca_file),
        private_key=_pem(settings.tls_client_key_file),
        certificate_chain=_pem(settings.tls_client_cert_file),
    )
