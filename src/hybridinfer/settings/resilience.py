"""How the gateway survives slow and failing paths: breakers, ejection, retries, hedges, shedding.

A mixin of :class:`~hybridinfer.settings.gateway.Settings`, apart only to keep each module
small; the fields keep their flat ``HYBRIDINFER_*`` names.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class ResilienceSettings(BaseSettings):
    """Breakers, outlier ejection, retries, hedging, load shedding and admission, probes."""

    breaker_failures: int = Field(
        3, ge=1, description="Consecutive upstream failures that open a deployment's breaker."
    )
    breaker_open_s: float = Field(
        1.0, gt=0.0, description="How long a breaker stays open before a half-open trial."
    )
    breaker_max_open_s: float = Field(
        30.0, gt=0.0, description="Cap of the open period's ceiling (doubles per failed trial)."
    )
    breaker_reset_successes: int = Field(
        5, ge=1, description="Calls in a row that succeed before a breaker's back-off resets."
    )
    eject_max_s: float = Field(
        2.0, gt=0.0, description="Longest outlier ejection (jittered, doubling up to this)."
    )
    eject_max_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Most of a tier's deployments ejected at once (>= 1; 0: no ejection).",
    )
    retry_attempts: int = Field(
        2,
        ge=1,
        description="Tries of one deployment (first included) on retryable failures (connect "
        "errors, HTTP 502/503/504, timeouts) before falling back; never past the deadline.",
    )
    retry_base_ms: float = Field(
        50.0, gt=0.0, description="The first retry waits up to this long (full jitter)."
    )
    retry_max_ms: float = Field(
        1000.0, gt=0.0, description="Cap of one retry wait (it doubles per retry up to this)."
    )
    attempt_timeout_ms: int = Field(
        0,
        ge=0,
        description="Longest one try of a deployment may take, so a hung call is retried or "
        "falls back in time (0: the adaptive bound, attempt_timeout_factor).",
    )
    attempt_timeout_factor: float = Field(
        4.0,
        ge=0.0,
        description="Without attempt_timeout_ms: once a deployment has 5 observed answers, "
        "one try of it may take this many times its p99 (at least attempt_timeout_floor_ms), "
        "so a call into a cut link costs a few times its usual latency, not the deadline "
        "(0: a try may use whatever is left of the request's deadline). Streamed chats are "
        "not bounded by it.",
    )
    attempt_timeout_floor_ms: int = Field(
        250, ge=1, description="The adaptive per-try bound is never below this."
    )
    hedge_delay_ms: float = Field(
        50.0,
        gt=0.0,
        description="Hedged subtasks: head start of the first call until its deployment has "
        "20 observed calls; after that, their p95 latency.",
    )
    hedge_below_latency_ms: float = Field(
        0.0,
        ge=0.0,
        description="Hedge the subtasks of requests whose max_latency_ms is at most this "
        "(0: only requests with options.hedge true, and latency-sensitive subtasks).",
    )
    hedge_latency_sensitive: bool = Field(
        True, description="Hedge latency-sensitive subtasks unless the request says otherwise."
    )
    shed_max_in_flight: int = Field(
        64,
        ge=1,
        description="Inference requests the gateway runs at once (load shedding). One event "
        "loop gains no throughput from more (its peak is reached near 32), only latency.",
    )
    shed_max_queued: int = Field(
        128,
        ge=0,
        description="Inference requests waiting for a slot; past this: 503 overloaded with "
        "Retry-After.",
    )
    shed_max_wait_ms: int = Field(
        1000, ge=0, description="Longest wait for a slot before 503 overloaded."
    )
    shed_max_busy: float = Field(
        0.95,
        ge=0.0,
        le=1.0,
        description="Share of its time the event loop may have work (on a core or waiting "
        "for one) while requests run; past it "
        "fewer inference requests run at once (down to shed_busy_in_flight) and the rest are "
        "refused (503 overloaded with Retry-After), so the answered stay fast past the peak. "
        "0: off (only the slot bounds); each of --workers N reads its own loop.",
    )
    shed_busy_in_flight: int = Field(
        8,
        ge=1,
        description="Inference requests let run at once however busy the event loop is.",
    )
    shed_retry_after_s: float = Field(
        1.0, gt=0.0, description="Retry-After of a 503 overloaded answer (gateway and nodes)."
    )
    admission_max_in_flight: int = Field(
        64, ge=1, description="Calls in flight per node (admission); more wait by priority."
    )
    admission_max_queued: int = Field(
        256,
        ge=0,
        description="Calls waiting per node; past this a call is shed (503 overloaded) or, "
        "with a fallback left, goes there.",
    )
    local_cpu_interval_s: float = Field(
        0.5, gt=0.0, description="How often the host's CPU use is sampled (off the request path)."
    )
    local_cpu_alpha: float = Field(
        0.3, gt=0.0, le=1.0, description="EWMA weight of the newest CPU sample (1: no smoothing)."
    )
    local_cpu_saturated: float = Field(
        0.9,
        gt=0.0,
        le=1.0,
        description="Smoothed host CPU use (0..1) at which local admission is limited; "
        "restored below this minus 0.1.",
    )
    local_cpu_in_flight: int = Field(
        2,
        ge=1,
        description="Local-tier calls in flight while the CPU is saturated; calls with another "
        "deployment in their chain spill over to it instead of waiting.",
    )
    probe_interval_s: float = Field(
        1.0, gt=0.0, description="Health and RTT probe period of remote nodes (down on a miss)."
    )
    exchange_window_s: float = Field(
        5.0, gt=0.0, description="Span of network.<tier>.p95_ms and slow_share (probes, calls)."
    )
    slow_exchange_ms: float = Field(
        200.0, gt=0.0, description="An exchange slower than this counts in slow_share."
    )
