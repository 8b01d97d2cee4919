"""Offline estimators on logs whose truth is known: IPS and DR recover a target policy's
value from another policy's logged choices and propensities."""

from __future__ import annotations

import random

import pytest

from hybridinfer.learning.offline import Logged, evaluate, logged_from_records

ARMS = ("local", "cloud")
TRUE_MEAN = {"local": lambda d: 0.9 - 0.6 * d, "cloud": lambda d: 0.8}


def uniform_log(rows: int, seed: int = 0) -> list[Logged]:
    """A uniformly exploring logger (propensity 0.5) on rewards drawn around the truth."""
    rng = random.Random(seed)
    logged = []
    for _ in range(rows):
        difficulty = rng.random()
        arm = rng.choice(ARMS)
        reward = 1.0 if rng.random() < TRUE_MEAN[arm](difficulty) else 0.0
        logged.append(Logged((1.0, difficulty), arm, 0.5, reward, ARMS))
    return logged


def smart(context: tuple[float, ...], _arms: object) -> str:
    return "local" if context[1] < 1 / 6 else "cloud"


def truth_of_smart() -> float:
    # local on d < 1/6: mean of 0.9 - 0.6 d over it = 0.85; cloud 0.8 on the rest.
    return (1 / 6) * 0.85 + (5 / 6) * 0.8


def test_ips_and_snips_recover_a_target_policys_value() -> None:
    estimate = evaluate(uniform_log(20_000), smart)
    assert estimate.ips == pytest.approx(truth_of_smart(), abs=0.02)
    assert estimate.snips == pytest.approx(truth_of_smart(), abs=0.02)
    assert estimate.support == pytest.approx(0.5, abs=0.02)
    assert estimate.dr is None


def test_doubly_robust_with_the_true_model_is_nearly_exact() -> None:
    def model(context: tuple[float, ...], arm: str) -> float:
        return float(TRUE_MEAN[arm](context[1]))

    estimate = evaluate(uniform_log(4000), smart, model)
    assert estimate.dr is not None
    assert estimate.dr == pytest.approx(truth_of_smart(), abs=0.02)
    # With a wrong model DR still corrects towards the truth through the propensities.
    biased = evaluate(uniform_log(20_000), smart, lambda _c, _a: 0.0)
    assert biased.dr == pytest.approx(truth_of_smart(), abs=0.03)


def test_log_records_become_logged_decisions_with_weighed_rewards() -> None:
    record = {
        "context": [1.0, 0.2, 0.5, 0.1],
        "arm": "cloud",
        "propensity": 0.9,
        "candidates": ["local", "cloud"],
        "quality": 1.0,
        "latency": 0.5,
        "cost": 0.0,
    }
    (logged,) = logged_from_records([record], (2.0, 1.0, 1.0))
    assert logged.reward == pytest.approx(2.5 / 4)
    assert logged.candidates == ("local", "cloud")


def test_zero_propensity_and_empty_logs_are_refused() -> None:
    with pytest.raises(ValueError, match="no logged"):
        evaluate([], smart)
    with pytest.raises(ValueError, match="positive"):
        evaluate([Logged((1.0, 0.0), "local", 0.0, 1.0, ARMS)], smart)
