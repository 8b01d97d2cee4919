"""From a subtask's inputs to a model's tensors, and from its output tensors to an answer.

Every bundled model speaks one contract: named inputs as its card lists them, and the outputs
``label`` (class index) and ``probabilities``; so one codec serves the in-process and the
remote (V2) backends alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.core.topology import Deployment
from hybridinfer.errors import InvalidInput, UpstreamError
from hybridinfer.tensors.datatypes import NUMPY_BY_DATATYPE


def encode(deployment: Deployment, inputs: Mapping[str, Any]) -> dict[str, npt.NDArray[Any]]:
    """One request row per model input, shaped as the model's card says (batch of 1)."""
    arrays: dict[str, npt.NDArray[Any]] = {}
    for spec in deployment.inputs:
        if spec.name not in inputs:
            raise InvalidInput(f"model {deployment.model} needs input {spec.name!r}")
        shape = [1 if dim == -1 else dim for dim in spec.shape]
        value = inputs[spec.name]
        try:
            arrays[spec.name] = np.asarray(value, dtype=NUMPY_BY_DATATYPE[spec.datatype]).reshape(
                shape
            )
        except (KeyError, TypeError, ValueError):
            raise InvalidInput(f"input {spec.name!r} does not fit {spec.datatype}{shape}") from None
    return arrays


def decode(deployment: Deployment, outputs: Mapping[str, npt.NDArray[Any]]) -> dict[str, Any]:
    """Classification outputs as ``label``, ``confidence`` and per-label ``scores``."""
    probabilities = outputs.get("probabilities")
    if probabilities is None or probabilities.size == 0:
        raise UpstreamError(f"model {deployment.model} returned no probabilities")
    row = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    labels = deployment.labels or [str(index) for index in range(row.size)]
    if len(labels) != row.size:
        raise UpstreamError(
            f"model {deployment.model} returned {row.size} scores for {len(labels)} labels"
        )
    best = int(row.argmax())
    return {
        "label": labels[best],
        "confidence": float(row[best]),
        "scores": {label: round(float(score), 6) for label, score in zip(labels, row, strict=True)},
    }
