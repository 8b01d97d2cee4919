"""EWMA signals per deployment: the first answer sets the latency, later ones move it by
``alpha``; failures move only the error rate."""

from __future__ import annotations

import pytest

from hybridinfer.signals.ewma import Signals


def test_an_unobserved_deployment_reads_its_prior_and_no_errors() -> None:
    signals = Signals()
    assert signals.latency_ms("edge/m:1", prior_ms=7.5) == 7.5
    assert signals.error_rate("edge/m:1") == 0.0


def test_the_first_answer_sets_the_latency_and_later_ones_move_it_by_alpha() -> None:
    signals = Signals(alpha=0.25)
    signals.observe("d", 100.0, ok=True)
    assert signals.latency_ms("d", prior_ms=1.0) == 100.0
    signals.observe("d", 200.0, ok=True)
    assert signals.latency_ms("d", prior_ms=1.0) == pytest.approx(125.0)


def test_failures_raise_the_error_rate_and_leave_the_latency() -> None:
    signals = Signals(alpha=0.5)
    signals.observe("d", 10.0, ok=True)
    signals.observe("d", 5_000.0, ok=False)  # a timeout's duration says nothing of speed
    assert signals.latency_ms("d", prior_ms=1.0) == 10.0
    assert signals.error_rate("d") == pytest.approx(0.5)
    signals.observe("d", 10.0, ok=True)
    assert signals.error_rate("d") == pytest.approx(0.25)


def test_a_deployment_that_only_failed_still_reads_its_prior() -> None:
    signals = Signals()
    signals.observe("d", 30.0, ok=False)
    assert signals.latency_ms("d", prior_ms=4.0) == 4.0
    assert signals.error_rate("d") > 0.0
    assert signals.error_rate("other") == 0.0
