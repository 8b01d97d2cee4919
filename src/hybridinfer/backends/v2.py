"""Remote models over the Open Inference Protocol (KServe V2): REST, or gRPC for the nodes
that registered a gRPC endpoint."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

import aiohttp
import grpc
import numpy.typing as npt
import orjson

from hybridinfer.backends import codec
from hybridinfer.backends.http import HttpBackend, json_object
from hybridinfer.backends.v2grpc import GrpcV2Client
from hybridinfer.core.topology import Deployment, Node
from hybridinfer.errors import (
    UpstreamError,
    UpstreamRejected,
)
from hybridinfer.tensors.datatypes import to_array, to_tensor


class V2Backend(HttpBackend):
    """One pooled HTTP client for every V2 node, and pooled gRPC channels for the nodes that
    registered a gRPC endpoint (``v2grpc.py``): those are called over gRPC."""

    protocol = "v2"

    def __init__(
        self,
        connections: int = 100,
        tls: ssl.SSLContext | None = None,
        grpc_credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        super().__init__(connections, tls)
        self._grpc = GrpcV2Client(grpc_credentials)

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        arrays = codec.encode(deployment, inputs)
        if node.grpc_url is not None:
            outputs = await self._grpc.infer(node, deployment, arrays, timeout_s)
        else:
            outputs = await self._infer_rest(node, deployment, arrays, timeout_s)
        if "probabilities" not in outputs and "predict_proba" in outputs:
            outputs["probabilities"] = outputs["predict_proba"]  # MLServer's sklearn runtime
        return codec.decode(deployment, outputs)

    async def _infer_rest(
        self,
        node: Node,
        deployment: Deployment,
        arrays: Mapping[str, npt.NDArray[Any]],
        timeout_s: float,
    ) -> dict[str, npt.NDArray[Any]]:
        request: dict[str, Any] = {
            "inputs": [to_tensor(name, array) for name, array in arrays.items()]
        }
        if deployment.outputs:  # servers such as MLServer return only their default otherwise
            request["outputs"] = [{"name": spec.name} for spec in deployment.outputs]
        body = orjson.dumps(request)
        url = f"{node.url}/v2/models/{deployment.model}/versions/{deployment.version}/infer"
        payload = await self._post(url, body, timeout_s, deployment.model)
        try:
            return {
                tensor["name"]: to_array(
                    tensor["name"], tensor["datatype"], tensor["shape"], tensor["data"]
                )
                for tensor in payload["outputs"]
            }
        except (KeyError, TypeError) as exc:
            raise UpstreamError(f"{deployment.model}: malformed V2 response ({exc})") from None

    async def _post(self, url: str, body: bytes, timeout_s: float, model: str) -> dict[str, Any]:
        status, raw = await self._send(url, body, timeout_s, model)
        payload = json_object(raw, status, model)
        if status >= 400:
            error = UpstreamRejected if status < 500 else UpstreamError
            message = payload.get("error") or "no error message"
            raise error(f"{model}: HTTP {status}: {message}", upstream_status=status)
        return payload

    async def probe(self, node: Node, timeout_s: float) -> bool:
        """``GET /v2/health/ready`` answers 200 within ``timeout_s`` (over gRPC: the health
        service says SERVING)."""
        if node.grpc_url is not None:
            return await self._grpc.probe(node, timeout_s)
        try:
            async with self._client().get(
                f"{node.url}/v2/health/ready", timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as response:
                await response.read()
                return response.status == 200
        except (TimeoutError, aiohttp.ClientError, OSError):
            return False

    async def aclose(self) -> None:
        await super().aclose()
        await self._grpc.aclose()
