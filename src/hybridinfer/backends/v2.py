"""Remote models over the Open Inference Protocol (KServe V2) REST API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson

from hybridinfer.backends import codec
from hybridinfer.backends.http import HttpBackend, json_object
from hybridinfer.core.topology import Deployment, Node
from hybridinfer.errors import (
    UpstreamError,
    UpstreamRejected,
)
from hybridinfer.tensors.datatypes import to_array, to_tensor


class V2Backend(HttpBackend):
    """One pooled HTTP client for every V2 node."""

    protocol = "v2"

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        arrays = codec.encode(deployment, inputs)
        request: dict[str, Any] = {
            "inputs": [to_tensor(name, array) for name, array in arrays.items()]
        }
        if deployment.outputs:  # servers such as MLServer return only their default otherwise
            request["outputs"] = [{"name": spec.name} for spec in deployment.outputs]
        body = orjson.dumps(request)
        url = f"{node.url}/v2/models/{deployment.model}/versions/{deployment.version}/infer"
        payload = await self._post(url, body, timeout_s, deployment.model)
        try:
            outputs = {
                tensor["name"]: to_array(
                    tensor["name"], tensor["datatype"], tensor["shape"], tensor["data"]
                )
                for tensor in payload["outputs"]
            }
        except (KeyError, TypeError) as exc:
            raise UpstreamError(f"{deployment.model}: malformed V2 response ({exc})") from None
        if "probabilities" not in outputs and "predict_proba" in outputs:
            outputs["probabilities"] = outputs["predict_proba"]  # MLServer's sklearn runtime
        return codec.decode(deployment, outputs)

    async def _post(self, url: str, body: bytes, timeout_s: float, model: str) -> dict[str, Any]:
        status, raw = await self._send(url, body, timeout_s, model)
        payload = json_object(raw, status, model)
        if status >= 400:
            error = UpstreamRejected if status < 500 else UpstreamError
            message = payload.get("error") or "no error message"
            raise error(f"{model}: HTTP {status}: {message}", upstream_status=status)
        return payload

    async def probe(self, node: Node, timeout_s: float) -> bool:
        """``GET /v2/health/ready`` answers 200 within ``timeout_s``."""
        try:
            async with self._client().get(
                f"{node.url}/v2/health/ready", timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as response:
                await response.read()
                return response.status == 200
        except (TimeoutError, aiohttp.ClientError, OSError):
            return False
