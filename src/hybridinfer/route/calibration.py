"""Turn a cascade knob in user terms into a confidence threshold, from a model's calibration.

The local model's card carries, from its calibration split (never used for training), the
quantiles of its confidence and a table of (threshold → escalated share, cascade accuracy).
"""

from __future__ import annotations

import bisect
from typing import Any

from hybridinfer.policy.document import CascadeRule


def threshold_for_share(quantiles: list[dict[str, float]], share: float) -> float | None:
    """The confidence below which about ``share`` of calls fall, interpolated linearly
    between the stored ``{q, confidence}`` quantiles; ``share`` is clamped to [0, 1]."""
    if not quantiles:
        return None
    levels = [float(point["q"]) for point in quantiles]
    values = [float(point["confidence"]) for point in quantiles]
    share = min(max(share, 0.0), 1.0)
    right = bisect.bisect_left(levels, share)
    if right == 0:
        return values[0]
    if right == len(levels):
        return values[-1]
    low, high = levels[right - 1], levels[right]
    weight = (share - low) / (high - low) if high > low else 0.0
    return values[right - 1] + weight * (values[right] - values[right - 1])


def _threshold_for_drop(cascade: dict[str, Any], drop: float) -> float | None:
    points = cascade.get("points") or []
    if not points:
        return None
    floor = float(cascade["partner_accuracy"]) - drop
    good = [p for p in points if float(p["accuracy"]) >= floor - 1e-12]
    if not good:  # nothing reaches it: escalate as much as the table goes
        return float(max(points, key=lambda p: float(p["cloud_share"]))["threshold"])
    return float(min(good, key=lambda p: float(p["cloud_share"]))["threshold"])


def resolve_threshold(rule: CascadeRule, calibration: dict[str, Any]) -> float | None:
    """The confidence threshold for ``rule``, or None if the calibration cannot tell."""
    if rule.threshold is not None:
        return rule.threshold
    if rule.target_cloud_share is not None:
        return threshold_for_share(
            list(calibration.get("confidence_quantiles") or []), rule.target_cloud_share
        )
    if rule.max_quality_drop is not None and calibration.get("cascade"):
        return _threshold_for_drop(calibration["cascade"], rule.max_quality_drop)
    return None
