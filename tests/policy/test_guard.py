"""The guard block: each tolerance breaks on its own figure and names itself; the steps must
rise to 100; a policy without the block gets the defaults."""

from __future__ import annotations

import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.policy.document import compile_policy
from hybridinfer.policy.guard import Figures, Guard, breaches, p99

BASE = Figures(100, 0.01, 100.0, 0.2, 0.0001)


def test_a_canary_like_its_baseline_passes() -> None:
    assert breaches(Guard(), BASE, BASE) == []


@pytest.mark.parametrize(
    ("canary", "guard"),
    [
        (Figures(100, 0.05, 100.0, 0.2, 0.0001), "error_rate"),
        (Figures(100, 0.01, 200.0, 0.2, 0.0001), "p99_latency"),
        (Figures(100, 0.01, 100.0, 0.9, 0.0001), "cloud_share"),
        (Figures(100, 0.01, 100.0, 0.2, 0.0002), "spend_per_request"),
    ],
)
def test_each_guard_breaks_on_its_own_figure(canary: Figures, guard: str) -> None:
    (breach,) = breaches(Guard(), canary, BASE)
    assert breach.guard == guard
    assert guard in breach.sentence()
    assert breach.canary > breach.limit


def test_a_free_baseline_breaks_the_spend_guard_at_any_spend() -> None:
    free = Figures(100, 0.0, 10.0, 0.0, 0.0)
    costly = Figures(100, 0.0, 10.0, 0.0, 0.00001)
    assert [b.guard for b in breaches(Guard(max_cloud_share_increase=1.0), costly, free)] == [
        "spend_per_request"
    ]
    assert breaches(Guard(spend_slack=0.001), costly, free) == []


def test_the_block_is_read_from_the_policy_and_validated() -> None:
    policy = compile_policy("version: g\nguard: {steps: [20, 100], dwell_s: 5, min_requests: 3}\n")
    assert policy.policy.guard.steps == (20.0, 100.0)
    assert compile_policy("version: d\n").policy.guard == Guard()
    for bad in ("[5, 50]", "[50, 20, 100]", "[0, 100]", "[100]"):
        with pytest.raises(ConfigError):
            compile_policy(f"version: b\nguard: {{steps: {bad}}}\n")


def test_p99_is_the_nearest_rank() -> None:
    assert p99([]) == 0.0
    assert p99([float(i) for i in range(1, 101)]) == 99.0
    assert p99([5.0]) == 5.0
