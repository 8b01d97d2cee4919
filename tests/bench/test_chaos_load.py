"""The chaos load generator's own checks: it reports falling behind, latency runs from the
schedule, and a scenario whose faulty path carried nothing fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.chaos.load import (
    FaultNotExercised,
    GeneratorBehind,
    Load,
    Outcome,
    Pace,
    Row,
    read_answer,
    record,
    require_traffic,
)


def outcome(sent_s: float, tier: str | None, status: int = 200) -> Outcome:
    return Outcome(sent_s, 5.0, status, "sentiment", tier=tier)


def test_the_cut_scenario_fails_when_the_cloud_carried_nothing_before_the_cut() -> None:
    local_only = [outcome(t / 10, "local") for t in range(30)] + [outcome(3.5, "cloud")]
    with pytest.raises(FaultNotExercised, match="cloud tier answered nothing"):
        require_traffic(local_only, "cloud", fault_at_s=3.0)


def test_the_cut_scenario_counts_the_cloud_answers_before_the_cut() -> None:
    mixed = [outcome(0.1, "cloud"), outcome(0.2, "local"), outcome(0.3, "cloud", status=503)]
    assert require_traffic([*mixed, outcome(3.1, "cloud")], "cloud", fault_at_s=3.0) == 1


def test_a_generator_that_kept_its_schedule_is_not_behind() -> None:
    assert Pace(20.0, 200, 10.0, 0.4, 3.0).behind() is None


def test_a_generator_that_sent_too_slowly_or_too_late_is_behind() -> None:
    slow = Pace(20.0, 200, 12.0, 0.4, 3.0)
    assert slow.achieved_rate == pytest.approx(16.67, abs=0.01)
    assert "achieved 16.7/s of 20.0/s" in str(slow.behind())
    assert "p99 dispatch lag 900 ms" in str(Pace(20.0, 200, 10.0, 20.0, 900.0).behind())


def test_record_stores_the_row_then_fails_a_generator_that_fell_behind(tmp_path: Path) -> None:
    load = Load("http://unused", [{"task": "sentiment"}], rate=100.0)
    load.lags_ms = [0.0] * 98 + [800.0, 900.0]
    load.elapsed_s = 1.0
    row = Row.of("x", [outcome(0.0, "local")], None)
    with pytest.raises(GeneratorBehind, match="fell behind"):
        record(row, "none", load, path=tmp_path / "chaos.json")
    assert '"lag_p99_ms"' in (tmp_path / "chaos.json").read_text()


async def test_latency_runs_from_the_scheduled_time_not_the_late_send() -> None:
    load = Load("http://unused", [], rate=1.0)
    load.started -= 2.0  # the generator is 2 s behind a request due at 0

    class Refused:
        def post(self, *args: object, **kwargs: object) -> object:
            raise TimeoutError

    await load.send(Refused(), {"task": "sentiment"}, due=0.0)  # type: ignore[arg-type]
    sent = load.outcomes[0]
    assert sent.sent_s == 0.0
    assert sent.late_ms >= 2000.0
    assert sent.latency_ms >= 2000.0


def test_a_failed_escalation_is_read_as_degraded_with_its_role() -> None:
    answered = outcome(0.0, None)
    body = {"subtasks": [{"tier": "local", "role": "primary", "degraded": "escalation failed"}]}
    read_answer(answered, body)
    assert (answered.tier, answered.role, answered.degraded) == ("local", "primary", True)
    assert Row.of("x", [answered, outcome(0.1, "cloud")], None).degraded == 1
