"""CEL conditions: compiled once, boolean only, and a missing key at evaluation time reads as
false and is counted, never raised on the request path."""

from __future__ import annotations

import pytest

from hybridinfer.policy.expressions import Condition, ExpressionError, Prepared

SIGNALS = {
    "subtask": {"privacy": "sensitive", "complexity": 0.8},
    "request": {"task": "sentiment"},
    "node": {"local": {"load": 0.9}},
    "network": {"cloud": {"rtt_ms": 250.0}},
    "budget": {"fraction": 0.5},
}


@pytest.mark.parametrize("prepared", [False, True])
def test_a_condition_holds_on_the_signals_it_reads(prepared: bool) -> None:
    activation = Prepared(SIGNALS) if prepared else SIGNALS
    assert Condition("subtask.privacy == 'sensitive' && node.local.load > 0.8").holds(activation)
    assert not Condition("network.cloud.rtt_ms < 100.0").holds(activation)


def test_a_missing_key_reads_as_false_and_is_counted() -> None:
    condition = Condition("node.gpu.load > 0.5")
    assert not condition.holds(SIGNALS)
    assert not condition.holds(Prepared(SIGNALS))
    assert condition.failures == 2
    assert not Condition("false").holds(SIGNALS)
    assert Condition("false").failures == 0


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("subtask.size +", "at column"),
        ("nodes.local.load > 1", "undeclared"),
        ("subtask.size + 1 == 2 ? 'a' : 'b'", "must be boolean, not string"),
    ],
)
def test_what_does_not_compile_to_a_boolean_is_refused(source: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        Condition(source)


def test_the_check_on_documented_signals_catches_what_compiling_cannot() -> None:
    Condition("budget.fraction > 0.2").check(SIGNALS)
    with pytest.raises(ExpressionError, match="fails on the documented signals"):
        Condition("node.gpu.load > 1.0").check(SIGNALS)
    with pytest.raises(ExpressionError, match="must be boolean"):
        Condition("subtask.complexity").check(SIGNALS)
