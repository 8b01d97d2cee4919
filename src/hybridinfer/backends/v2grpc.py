"""The Open Inference Protocol over gRPC: how the V2 backend calls a node that registered a
gRPC endpoint (``grpc://host:port``, or ``grpcs://`` for TLS).

One channel per endpoint, made inside the event loop and shared by every call (HTTP/2
multiplexes them). Its options, and why:

- **keepalive** pings every 5 s, even between calls, and a ping unanswered for 2 s closes the
  connection: a cut link is seen within ~7 s even when no call is out, rather than when the
  kernel gives up on the TCP connection minutes later;
- **reconnect back-off** from 100 ms to at most 1 s, and each connect attempt gives up after
  1 s (gRPC's defaults: back-off up to 120 s and 20 s per attempt, so a restored link could
  wait minutes to be used again): a link that comes back is used again within 1 to 2 s;
- calls fail fast (UNAVAILABLE) while the channel cannot connect, so the executor falls back;
  gRPC's own retries are off, as the executor retries inside the request's deadline;
- the send bound comes from the node's input limits (its deployments' ``max_input``, 4 bytes
  a character, plus room for the message around them), the receive bound is 4 MiB.

Status codes map into ``errors.py``: UNAVAILABLE and CANCELLED → ``UpstreamUnavailable`` and
DEADLINE_EXCEEDED → ``DeadlineExceeded`` (both retried); a status that blames the request
(INVALID_ARGUMENT, NOT_FOUND, …) → ``UpstreamRejected`` (never retried); anything else →
``UpstreamError``. Each call carries the request's ``traceparent`` as metadata.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import grpc
import numpy.typing as npt
from grpc_health.v1 import health_pb2

from hybridinfer.core.topology import Deployment, Node
from hybridinfer.core.tracecontext import outgoing_headers
from hybridinfer.errors import (
    DeadlineExceeded,
    HybridInferError,
    InvalidInput,
    UpstreamError,
    UpstreamRejected,
    UpstreamUnavailable,
)
from hybridinfer.tensors.grpcwire import response_arrays, set_inputs
from hybridinfer.tensors.proto import grpc_predict_v2_pb2 as pb

SERVICE = "inference.GRPCInferenceService"
RECEIVE_LIMIT_BYTES = 4 * 1024 * 1024
MESSAGE_ROOM_BYTES = 64 * 1024
"""Room for the message around a largest input (names, shapes, the other inputs)."""
CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.keepalive_time_ms", 5_000),
    ("grpc.keepalive_timeout_ms", 2_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 1_000),  # also the connect attempt's timeout
    ("grpc.max_reconnect_backoff_ms", 1_000),
    ("grpc.enable_retries", 0),
    ("grpc.max_receive_message_length", RECEIVE_LIMIT_BYTES),
]
REJECTED = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNIMPLEMENTED: 501,
}
"""Statuses that blame the request, with the HTTP status a REST node would have sent."""


def map_rpc_error(error: grpc.aio.AioRpcError, model: str) -> HybridInferError:
    """One of our errors for a failed call."""
    code = error.code()
    message = f"{model}: gRPC {code.name}: {error.details() or 'no message'}"
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
        return UpstreamUnavailable(message, upstream_status=503)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineExceeded(f"{model} did not answer within the deadline (gRPC)")
    if code in REJECTED:
        return UpstreamRejected(message, upstream_status=REJECTED[code])
    if code is grpc.StatusCode.ABORTED:
        return UpstreamError(message, upstream_status=503)
    return UpstreamError(message, upstream_status=500)


def send_limit(node: Node) -> int:
    """The largest message sent to ``node``: its largest input limit, 4 bytes a character."""
    largest = max((d.max_input for d in node.deployments), default=0)
    return 4 * largest + MESSAGE_ROOM_BYTES


def _target(url: str) -> tuple[str, bool]:
    """``host:port`` and whether the endpoint wants TLS, from ``grpc[s]://host:port``."""
    scheme, _, target = url.partition("://")
    return target, scheme == "grpcs"


class _Link:
    """One channel to one endpoint, with its callables made once."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.infer = channel.unary_unary(
            f"/{SERVICE}/ModelInfer",
            request_serializer=pb.ModelInferRequest.SerializeToString,
            response_deserializer=pb.ModelInferResponse.FromString,
        )
        self.health = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        self.ready = channel.unary_unary(
            f"/{SERVICE}/ServerReady",
            request_serializer=pb.ServerReadyRequest.SerializeToString,
            response_deserializer=pb.ServerReadyResponse.FromString,
        )


class GrpcV2Client:
    """Pooled gRPC channels to V2 nodes; ``infer`` and ``probe`` as the V2 backend needs."""

    def __init__(self, credentials: grpc.ChannelCredentials | None = None) -> None:
        self._credentials = credentials
        self._links: dict[tuple[str, bool, int], _Link] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def _link(self, node: Node) -> _Link:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # channels belong to the loop that made them
            self._links, self._loop = {}, loop
        assert node.grpc_url is not None
        target, secure = _target(node.grpc_url)
        limit = send_limit(node)
        key = (target, secure, limit)
        link = self._links.get(key)
        if link is None:
            options = [*CHANNEL_OPTIONS, ("grpc.max_send_message_length", limit)]
            if secure:
                credentials = self._credentials or grpc.ssl_channel_credentials()
                channel = grpc.aio.secure_channel(target, credentials, options=options)
            else:
                channel = grpc.aio.insecure_channel(target, options=options)
            link = self._links[key] = _Link(channel)
        return link

    async def infer(
        self,
        node: Node,
        deployment: Deployment,
        arrays: Mapping[str, npt.NDArray[Any]],
        timeout_s: float,
    ) -> dict[str, npt.NDArray[Any]]:
        """The output tensors of ``deployment`` for ``arrays`` (typed contents, which every
        V2 gRPC server reads)."""
        request = pb.ModelInferRequest(
            model_name=deployment.model, model_version=deployment.version
        )
        set_inputs(request, arrays)
        for spec in deployment.outputs:  # servers such as MLServer return only their default
            request.outputs.add(name=spec.name)
        metadata = tuple(outgoing_headers({}).items())
        try:
            response = await self._link(node).infer(request, timeout=timeout_s, metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            raise map_rpc_error(exc, deployment.model) from None
        try:
            return response_arrays(response)
        except InvalidInput as exc:
            raise UpstreamError(f"{deployment.model}: malformed V2 response ({exc})") from None

    async def probe(self, node: Node, timeout_s: float) -> bool:
        """``grpc.health.v1`` says the inference service is SERVING within ``timeout_s``; a
        server without that health service (MLServer) is asked ``ServerReady`` instead."""
        link = self._link(node)
        request = health_pb2.HealthCheckRequest(service=SERVICE)
        try:
            answer = await link.health(request, timeout=timeout_s)
            return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.NOT_FOUND):
                return False
        try:
            ready = await link.ready(pb.ServerReadyRequest(), timeout=timeout_s)
        except grpc.aio.AioRpcError:
            return False
        return bool(ready.ready)

    async def aclose(self) -> None:
        links, self._links = self._links, {}
        if self._loop is asyncio.get_running_loop():
            for link in links.values():
                await link.channel.close()
