"""Model cards: what a bundled model is, how it is called and how good and fast it is.

A card is the JSON file next to ``model.onnx`` (``<models>/<name>/<version>/card.json``).
Routers read it to learn a model's tensor contract, quality, latency and the confidence
calibration that turns "send at most X % to the cloud" into a threshold.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from hybridinfer.route.calibration import threshold_for_share

Capability = Literal["text-classification", "image-classification"]
Task = Literal["sentiment", "digits"]
Datatype = Literal["BYTES", "FP32", "INT64"]
QUANTILE_LEVELS = tuple(round(0.05 * step, 2) for step in range(21))


class _Frozen(BaseModel):
    # Unknown keys are ignored so a card written by a newer recipe still loads.
    model_config = ConfigDict(frozen=True, extra="ignore")


class TensorSpec(_Frozen):
    """One input or output tensor; ``-1`` in ``shape`` is the batch dimension."""

    name: str
    datatype: Datatype
    shape: tuple[int, ...]


class Metrics(_Frozen):
    """Quality on the held-out test split, measured with onnxruntime."""

    accuracy: float = Field(ge=0.0, le=1.0)
    n_test: int = Field(gt=0)
    onnx_agreement: float = Field(
        ge=0.0, le=1.0, description="share of test rows where ONNX and scikit-learn agree"
    )


class Latency(_Frozen):
    """Single-row onnxruntime latency (one intra-op thread) in milliseconds."""

    p50: float = Field(ge=0.0)
    p99: float = Field(ge=0.0)
    n_calls: int = Field(gt=0)


class ConfidenceQuantile(_Frozen):
    """``q`` of the calibration rows have a max probability below ``confidence``."""

    q: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)

    @classmethod
    def summarise(cls, confidence: NDArray[np.floating[Any]]) -> tuple[ConfidenceQuantile, ...]:
        """Quantiles of ``confidence`` at every ``QUANTILE_LEVELS`` (each 5 %)."""
        values = np.clip(np.quantile(confidence, QUANTILE_LEVELS), 0.0, 1.0)
        return tuple(
            cls(q=q, confidence=round(float(value), 6))
            for q, value in zip(QUANTILE_LEVELS, values, strict=True)
        )


class CascadePoint(_Frozen):
    """Calibration-split accuracy when rows below ``threshold`` escalate to the partner."""

    cloud_share: float = Field(ge=0.0, le=1.0)
    threshold: float = Field(ge=0.0, le=1.0)
    accuracy: float = Field(ge=0.0, le=1.0)


class Cascade(_Frozen):
    """How this (small) model performs when cascaded into a larger partner model."""

    partner: str
    partner_accuracy: float = Field(ge=0.0, le=1.0)
    points: tuple[CascadePoint, ...]

    @classmethod
    def measure(
        cls,
        partner: str,
        truth: NDArray[np.int64],
        small: tuple[NDArray[np.int64], NDArray[np.floating[Any]]],
        large_labels: NDArray[np.int64],
    ) -> Cascade:
        """Escalate rows whose ``small`` confidence is below each confidence quantile.

        ``small`` is (labels, confidence) of the small model on the calibration rows.
        """
        small_labels, confidence = small
        points = []
        for quantile in ConfidenceQuantile.summarise(confidence):
            escalate = confidence < quantile.confidence
            answer = np.where(escalate, large_labels, small_labels)
            points.append(
                CascadePoint(
                    cloud_share=round(float(escalate.mean()), 6),
                    threshold=quantile.confidence,
                    accuracy=round(float(np.mean(answer == truth)), 6),
                )
            )
        accuracy = float(np.mean(large_labels == truth))
        return cls(partner=partner, partner_accuracy=accuracy, points=tuple(points))


class Calibration(_Frozen):
    """Behaviour on the calibration split (never used for training)."""

    n: int = Field(gt=0)
    accuracy: float = Field(ge=0.0, le=1.0)
    confidence_quantiles: tuple[ConfidenceQuantile, ...]
    cascade: Cascade | None = None

    def threshold_for_cloud_share(self, share: float) -> float:
        """The confidence below which about ``share`` of calls would escalate.

        Interpolates linearly between the stored quantiles; ``share`` is clamped to [0, 1].
        """
        threshold = threshold_for_share(
            [point.model_dump() for point in self.confidence_quantiles], share
        )
        if threshold is None:
            raise ValueError("this card has no confidence quantiles")
        return threshold


class ModelCard(_Frozen):
    """Everything a router or node needs to know about one exported model."""

    name: str
    version: str
    capability: Capability
    task: Task
    labels: tuple[str, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    description: str
    metrics: Metrics
    latency_ms: Latency
    size_bytes: int = Field(gt=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    recipe: str
    created_at: datetime
    calibration: Calibration
    params: dict[str, str | int | float] = Field(
        default_factory=dict, description="training details (features, hyper-parameters)"
    )

    def to_dict(self) -> dict[str, Any]:
        """The card as plain JSON-compatible data (what ``card.json`` holds)."""
        return self.model_dump(mode="json")

    def write(self, path: Path) -> None:
        """Write the card as JSON, atomically (a reader never sees half a file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=".card-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(self.model_dump_json(indent=2) + "\n")
            os.replace(scratch, path)
        except BaseException:
            Path(scratch).unlink(missing_ok=True)
            raise


def load_card(path: Path) -> ModelCard:
    """Read and validate a ``card.json`` (raises ``pydantic.ValidationError`` if malformed)."""
    return ModelCard.model_validate_json(path.read_bytes())
