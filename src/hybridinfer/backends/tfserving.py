"""Remote models behind TensorFlow Serving's REST predict API.

``POST {url}/v1/models/{name}[/versions/{version}]:predict`` with the row format
``{"instances": [...]}`` (one item per batch row: the bare value for a single named input, an
object of name → value for several). The answer is ``{"predictions": [...]}``: per row the bare
value when the model has one output, an object of name → value when it has several. Errors are
``{"error": "<message>"}``, the same shape V2 servers use, so HTTP and error mapping are shared
with ``V2Backend``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from hybridinfer.backends import codec
from hybridinfer.backends.v2 import V2Backend
from hybridinfer.core.topology import Deployment, Node
from hybridinfer.errors import UpstreamError


def instances(arrays: Mapping[str, npt.NDArray[Any]]) -> list[Any]:
    """Row-format instances: one per batch row."""
    names = list(arrays)
    rows = next(iter(arrays.values())).shape[0]
    if len(names) == 1:
        return [_plain(arrays[names[0]][row]) for row in range(rows)]
    return [{name: _plain(arrays[name][row]) for name in names} for row in range(rows)]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_plain(item) for item in value] if value.dtype == np.object_ else value.tolist()
    return value.item() if isinstance(value, np.generic) else value


def predictions(deployment: Deployment, payload: dict[str, Any]) -> dict[str, npt.NDArray[Any]]:
    """Named output arrays from a ``predictions`` answer; a lone output is the probabilities
    unless the deployment names it otherwise."""
    rows = payload.get("predictions")
    if not isinstance(rows, list) or not rows:
        raise UpstreamError(f"{deployment.model}: TF Serving answer has no predictions")
    try:
        if isinstance(rows[0], dict):
            return {name: np.asarray([row[name] for row in rows]) for name in rows[0]}
        name = deployment.outputs[0].name if deployment.outputs else "probabilities"
        return {name: np.asarray(rows)}
    except (KeyError, TypeError, ValueError) as exc:
        raise UpstreamError(f"{deployment.model}: malformed predictions ({exc})") from None


class TFServingBackend(V2Backend):
    """TF Serving's REST predict API over the same pooled HTTP client as ``V2Backend``."""

    protocol = "tfserving"

    async def infer(
        self, node: Node, deployment: Deployment, inputs: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        arrays = codec.encode(deployment, inputs)
        body = orjson.dumps({"instances": instances(arrays)})
        version = (
            f"/versions/{deployment.version}"
            if deployment.version.isascii() and deployment.version.isdigit()
            else ""
        )
        url = f"{node.url}/v1/models/{deployment.model}{version}:predict"
        outputs = predictions(deployment, await self._post(url, body, timeout_s, deployment.model))
        if "probabilities" not in outputs and deployment.outputs:
            first = deployment.outputs[0].name
            if first in outputs:
                outputs["probabilities"] = outputs[first]
        return codec.decode(deployment, outputs)
