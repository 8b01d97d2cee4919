"""Cascade knobs in user terms (a cloud share, a quality drop) turned into confidence
thresholds from a local model's calibration."""

from __future__ import annotations

import pytest

from hybridinfer.policy.document import CascadeRule
from hybridinfer.route.calibration import resolve_threshold, threshold_for_share


def test_calibration_turns_user_knobs_into_thresholds() -> None:
    calibration = {
        "confidence_quantiles": [
            {"q": 0.0, "confidence": 0.4},
            {"q": 0.5, "confidence": 0.6},
            {"q": 1.0, "confidence": 1.0},
        ],
        "cascade": {
            "partner_accuracy": 0.80,
            "points": [
                {"cloud_share": 0.1, "threshold": 0.45, "accuracy": 0.76},
                {"cloud_share": 0.3, "threshold": 0.55, "accuracy": 0.79},
                {"cloud_share": 0.5, "threshold": 0.60, "accuracy": 0.80},
            ],
        },
    }
    assert resolve_threshold(CascadeRule(target_cloud_share=0.25), calibration) == pytest.approx(
        0.5
    )
    assert resolve_threshold(CascadeRule(max_quality_drop=0.015), calibration) == 0.55
    assert resolve_threshold(CascadeRule(max_quality_drop=0.0), calibration) == 0.60
    assert resolve_threshold(CascadeRule(threshold=0.3), {}) == 0.3
    assert resolve_threshold(CascadeRule(target_cloud_share=0.3), {}) is None


QUANTILES = [
    {"q": 0.0, "confidence": 0.4},
    {"q": 0.5, "confidence": 0.6},
    {"q": 1.0, "confidence": 1.0},
]


@pytest.mark.parametrize(
    ("share", "threshold"),
    [(0.0, 0.4), (0.25, 0.5), (0.75, 0.8), (1.0, 1.0), (-0.5, 0.4), (2.0, 1.0)],
)
def test_a_share_is_interpolated_between_quantiles_and_clamped(
    share: float, threshold: float
) -> None:
    assert threshold_for_share(QUANTILES, share) == pytest.approx(threshold)


def test_without_quantiles_a_share_has_no_threshold() -> None:
    assert threshold_for_share([], 0.3) is None


def test_a_drop_nothing_reaches_escalates_as_much_as_the_table_goes() -> None:
    calibration = {
        "cascade": {
            "partner_accuracy": 0.95,
            "points": [
                {"cloud_share": 0.1, "threshold": 0.45, "accuracy": 0.76},
                {"cloud_share": 0.5, "threshold": 0.60, "accuracy": 0.80},
            ],
        }
    }
    assert resolve_threshold(CascadeRule(max_quality_drop=0.01), calibration) == 0.60
    assert (
        resolve_threshold(CascadeRule(max_quality_drop=0.01), {"cascade": {"points": []}}) is None
    )
