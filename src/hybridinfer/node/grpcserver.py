"""The node's gRPC server: ``GRPCInferenceService`` and ``grpc.health.v1`` on their own port,
plain, TLS or mutual TLS like the REST side.

Health answers ``SERVING`` for the server (``""``) and for the inference service while some
model serves (as ``GET /v2/health/ready`` answers 200), ``NOT_SERVING`` otherwise; the
gateway's prober asks it. Options, and why:

- message sizes are bounded by ``grpc_max_message_bytes`` both ways (gRPC's default receive
  bound is 4 MiB, its send bound none);
- callers may ping every second even between calls (``keepalive_permit_without_calls``), so a
  gateway's keepalive finds a dead link without the node answering its pings with GOAWAY
  ``too_many_pings``; the node pings idle callers every 20 s to drop dead connections;
- ``SO_REUSEPORT`` off: gRPC sets it by default on Linux, which would let a second node bind
  the same port and take half the calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from hybridinfer.errors import ConfigError
from hybridinfer.node.grpcservice import SERVICE, InferenceService
from hybridinfer.node.repository import ModelRepository
from hybridinfer.settings import NodeSettings

log = logging.getLogger("hybridinfer.node")
HEALTH_REFRESH_S = 0.5
"""How often the health status follows the repository (a model loaded or lost)."""
GRPC_GRACE_S = 2.0
"""How long calls in flight may finish when the node stops."""


def server_options(max_message_bytes: int) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", 1000),
        ("grpc.http2.max_ping_strikes", 0),
        ("grpc.keepalive_time_ms", 20_000),
        ("grpc.keepalive_timeout_ms", 5_000),
        ("grpc.so_reuseport", 0),
    ]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read TLS file {path}: {exc}") from None


def server_credentials(settings: NodeSettings) -> grpc.ServerCredentials | None:
    """None (plain) without a certificate; with ``tls_require_client_cert``, callers must
    present a certificate signed by ``tls_ca_file``."""
    if settings.tls_cert_file is None or settings.tls_key_file is None:
        return None
    pair = (_read(settings.tls_key_file), _read(settings.tls_cert_file))
    require = settings.tls_require_client_cert
    ca = _read(settings.tls_ca_file) if require and settings.tls_ca_file else None
    return grpc.ssl_server_credentials([pair], root_certificates=ca, require_client_auth=require)


async def _follow_health(repository: ModelRepository, servicer: health.aio.HealthServicer) -> None:
    serving = health_pb2.HealthCheckResponse.SERVING
    not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
    while True:
        await servicer.set(SERVICE, serving if repository.names() else not_serving)
        await asyncio.sleep(HEALTH_REFRESH_S)


@contextlib.asynccontextmanager
async def grpc_serving(
    repository: ModelRepository, settings: NodeSettings
) -> AsyncIterator[grpc.aio.Server]:
    """Serve on ``settings.grpc_port`` for the duration of the block; calls in flight get
    ``GRPC_GRACE_S`` to finish when it ends."""
    server = grpc.aio.server(options=server_options(settings.grpc_max_message_bytes))
    server.add_generic_rpc_handlers([InferenceService(repository).handler()])
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    address = f"{settings.host}:{settings.grpc_port}"
    credentials = server_credentials(settings)
    try:
        if credentials is None:
            server.add_insecure_port(address)
        else:
            server.add_secure_port(address, credentials)
    except RuntimeError as exc:  # grpc's way of saying the port is taken
        raise ConfigError(f"cannot listen for gRPC on {address}: {exc}") from None
    await server.start()
    follower = asyncio.create_task(_follow_health(repository, servicer), name="grpc-health")
    log.info("gRPC (Open Inference Protocol) on %s", address)
    try:
        yield server
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        await servicer.enter_graceful_shutdown()
        await server.stop(GRPC_GRACE_S)
