from __future__ import annotations

import pytest

from hybridinfer.errors import InvalidInput, NotFound
from hybridinfer.policy.canary import (
    CANARY_STEPS,
    Change,
    InvalidTransition,
    VersionState,
    bucket,
    next_step,
    on_canary_side,
    plan_canary,
    plan_promote,
    plan_rollback,
    summary,
)


def test_the_same_key_always_lands_on_the_same_side() -> None:
    keys = [f"user-{n}" for n in range(2000)]
    first = [on_canary_side(key, "v2", 20.0) for key in keys]
    again = [on_canary_side(key, "v2", 20.0) for key in keys]
    assert first == again
    assert bucket("user-7", "v2") == bucket("user-7", "v2")


def test_the_split_matches_the_percent_over_many_keys() -> None:
    for percent in CANARY_STEPS:
        share = sum(on_canary_side(f"req-{n}", "v2", percent) for n in range(20_000)) / 20_000
        assert abs(share - percent / 100.0) < 0.01, (percent, share)


def test_a_key_on_the_canary_side_stays_there_as_the_percent_grows() -> None:
    keys = [f"session-{n}" for n in range(5000)]
    previous = {key for key in keys if on_canary_side(key, "v2", 5.0)}
    for percent in (20.0, 50.0, 100.0):
        current = {key for key in keys if on_canary_side(key, "v2", percent)}
        assert previous <= current
        previous = current
    assert previous == set(keys)


def test_each_canary_version_picks_its_own_slice() -> None:
    keys = [f"k{n}" for n in range(4000)]
    on_v2 = {key for key in keys if on_canary_side(key, "v2", 20.0)}
    on_v3 = {key for key in keys if on_canary_side(key, "v3", 20.0)}
    assert on_v2 != on_v3


def test_steps_walk_5_20_50_100() -> None:
    assert [next_step(None), next_step(5.0), next_step(20.0), next_step(50.0)] == list(CANARY_STEPS)
    assert next_step(100.0) == 100.0
    assert next_step(10.0) == 20.0


STATES = [
    VersionState("v1", "active", activated_at=100.0),
    VersionState("v0", "retired", activated_at=50.0),
    VersionState("v2", "staged"),
]


def test_a_staged_version_goes_to_canary_then_is_promoted() -> None:
    assert plan_canary(STATES, "v2", 20.0) == [Change("v2", "staged", "canary", 20.0)]
    in_canary = [STATES[0], STATES[1], VersionState("v2", "canary", 20.0)]
    assert plan_canary(in_canary, "v2", None) == [Change("v2", "canary", "canary", 50.0)]
    assert plan_promote(in_canary, "v2") == [
        Change("v1", "active", "retired"),
        Change("v2", "canary", "active"),
    ]
    assert summary(in_canary) == {"active": "v1", "canary": {"version": "v2", "percent": 20.0}}


def test_a_canary_rolls_back_to_retired_and_the_active_one_stays() -> None:
    in_canary = [STATES[0], VersionState("v2", "canary", 50.0)]
    assert plan_rollback(in_canary, "v2") == [Change("v2", "canary", "retired")]


def test_rolling_back_the_active_version_restores_the_one_active_before_it() -> None:
    states = [
        VersionState("v2", "active", activated_at=300.0),
        VersionState("v1", "retired", activated_at=100.0),
        VersionState("v0", "retired", activated_at=50.0),
        VersionState("tried", "retired"),  # a canary that never became active
    ]
    assert plan_rollback(states, "v2") == [
        Change("v2", "active", "retired"),
        Change("v1", "retired", "active"),
    ]


@pytest.mark.parametrize(
    ("states", "call", "message"),
    [
        (STATES, lambda s: plan_promote(s, "v2"), "start a canary before promoting"),
        (STATES, lambda s: plan_canary(s, "v1", 20.0), "already active"),
        (STATES, lambda s: plan_rollback(s, "v2"), "only the active version or a canary"),
        (STATES[:1], lambda s: plan_rollback(s, "v1"), "no version was active before"),
        (
            [*STATES, VersionState("v3", "canary", 5.0)],
            lambda s: plan_canary(s, "v2", 20.0),
            "'v3' is in canary at 5 %",
        ),
    ],
)
def test_invalid_transitions_are_refused_with_409_and_the_reason(
    states: list[VersionState], call: object, message: str
) -> None:
    with pytest.raises(InvalidTransition) as raised:
        call(states)  # type: ignore[operator]
    assert raised.value.status_code == 409
    assert message in raised.value.message


def test_unknown_versions_and_bad_percents_are_refused() -> None:
    with pytest.raises(NotFound):
        plan_canary(STATES, "nope", 20.0)
    for percent in (0.0, -5.0, 100.5):
        with pytest.raises(InvalidInput):
            plan_canary(STATES, "v2", percent)
