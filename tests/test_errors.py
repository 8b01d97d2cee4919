"""The one exception tree: each error carries its status and code (a raiser may name a finer
code), and the headers its answer needs. test_layout.py checks the tree drawn in the docstring."""

from __future__ import annotations

import pytest

from hybridinfer.errors import (
    BudgetExhausted,
    HybridInferError,
    InvalidInput,
    NoCapacity,
    Overloaded,
    RateLimited,
    RateLimitUnavailable,
    RequestTimeout,
    UpstreamUnavailable,
)


def test_an_error_carries_its_status_code_and_message_and_may_name_a_finer_code() -> None:
    plain = InvalidInput("inputs.text must be a string")
    named = InvalidInput("n > 1", code="unsupported_parameter", details={"n": 2})
    assert (plain.status_code, plain.error_code, plain.message) == (
        400,
        "invalid_input",
        "inputs.text must be a string",
    )
    assert (named.error_code, named.details) == ("unsupported_parameter", {"n": 2})
    assert plain.details == {}
    assert str(plain) == "inputs.text must be a string"
    assert HybridInferError("x").status_code == 500


@pytest.mark.parametrize(
    ("error", "headers"),
    [
        (RateLimited("slow down", retry_after_s=0.2), {"Retry-After": "1"}),
        (BudgetExhausted("spent", retry_after_s=42.6), {"Retry-After": "43"}),
        (NoCapacity("nothing ready"), {}),
        (NoCapacity("breaker open", retry_after_s=4.4), {"Retry-After": "4"}),
        (Overloaded("shed", retry_after_s=1.0), {"Retry-After": "1"}),
        (RateLimitUnavailable("redis down"), {"Retry-After": "1"}),
        (RequestTimeout("too slow"), {"Connection": "close"}),
        (UpstreamUnavailable("node down"), {}),
    ],
)
def test_each_error_asks_for_the_headers_its_answer_needs(
    error: HybridInferError, headers: dict[str, str]
) -> None:
    assert error.headers() == headers


def test_an_upstream_error_keeps_the_upstreams_status() -> None:
    error = UpstreamUnavailable("503 from edge-1", upstream_status=503)
    assert (error.status_code, error.upstream_status) == (502, 503)
    assert UpstreamUnavailable("refused").upstream_status is None
