"""The one exception tree of hybridinfer.

Every error a caller can see is a ``HybridInferError``; it carries its HTTP status and a stable
machine-readable ``code``. One handler (``gateway.middleware.envelope_for``, called by the
gateway's front door) renders it as ``{"error": {"code", "message", "request_id"}}``.
Adapters map their dependency's exceptions (aiohttp, onnxruntime, SQLAlchemy, …) into this
tree, so nothing else escapes to a caller::

    HybridInferError (500 internal_error)
    ├── InvalidRequest (400 invalid_request)
    │   ├── InvalidJSON (400 invalid_json)
    │   └── InvalidInput (400 invalid_input)
    ├── Unauthorized (401 unauthorized)
    ├── Forbidden (403 forbidden)
    │   ├── PrivacyViolation (403 privacy_violation)
    │   └── PolicyDenied (403 policy_denied)
    ├── NotFound (404 not_found)
    │   ├── UnknownTask (404 unknown_task)
    │   └── UnknownModel (404 unknown_model)
    ├── MethodNotAllowed (405 method_not_allowed)
    ├── RequestTimeout (408 request_timeout)
    ├── Conflict (409 conflict)
    │   ├── StoreConflict (409 conflict: a row exists already)
    │   │   └── ConcurrentChange (409 policy_changed_concurrently)
    │   ├── PolicyConflict (409 policy_version_exists)
    │   ├── InvalidTransition (409 invalid_transition)
    │   └── IdempotencyKeyReused (409 idempotency_key_reused)
    ├── PayloadTooLarge (413 payload_too_large)
    ├── SchemaViolation (422 invalid_schema)
    │   ├── InvalidPolicy (422 invalid_policy)
    │   └── InvalidRules (422 invalid_rules)
    ├── RateLimited (429 rate_limited, Retry-After)
    │   └── BudgetExhausted (429 budget_exhausted)
    ├── UpstreamError (502 upstream_failed)
    │   ├── UpstreamUnavailable (502 upstream_unavailable)
    │   └── UpstreamRejected (502 upstream_rejected)
    ├── NoCapacity (503 no_capacity; Retry-After when it passes by itself)
    │   └── Overloaded (503 overloaded, Retry-After)
    ├── ServiceUnavailable (503 service_unavailable: a service of our own is away)
    │   ├── StoreUnavailable (503 store_unavailable)
    │   ├── CacheUnavailable (503 cache_unavailable)
    │   ├── QueueUnavailable (503 queue_unavailable)
    │   ├── RateLimitUnavailable (503 rate_limit_unavailable, Retry-After)
    │   └── NamesUnavailable (503 names_unavailable)
    ├── PseudonymisationFailed (503 pseudonymisation_failed)
    ├── DeadlineExceeded (504 deadline_exceeded)
    └── ConfigError (500 invalid_config; raised at start-up, never per request)

Every subclass lives in this module, so this drawing is the whole tree.
"""

from __future__ import annotations

from typing import Any, ClassVar


class HybridInferError(Exception):
    """Root of every error hybridinfer raises on purpose."""

    status_code: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init__(
        self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = code or self.code
        self.details = details or {}

    def headers(self) -> dict[str, str]:
        """Extra response headers this error asks for (e.g. ``Retry-After``)."""
        return {}


class InvalidRequest(HybridInferError):
    status_code = 400
    code = "invalid_request"


class InvalidJSON(InvalidRequest):
    code = "invalid_json"


class InvalidInput(InvalidRequest):
    code = "invalid_input"


class SchemaViolation(HybridInferError):
    status_code = 422
    code = "invalid_schema"


class InvalidPolicy(SchemaViolation):
    """A policy document that does not validate (the message names its line)."""

    code = "invalid_policy"


class InvalidRules(SchemaViolation):
    """A rule table sent to the running gateway does not validate (422, names the line)."""

    code = "invalid_rules"


class Unauthorized(HybridInferError):
    status_code = 401
    code = "unauthorized"


class Forbidden(HybridInferError):
    status_code = 403
    code = "forbidden"


class PrivacyViolation(Forbidden):
    code = "privacy_violation"


class PolicyDenied(Forbidden):
    """A policy rule with action ``deny`` matched the subtask."""

    code = "policy_denied"


class NotFound(HybridInferError):
    status_code = 404
    code = "not_found"


class UnknownTask(NotFound):
    code = "unknown_task"


class UnknownModel(NotFound):
    code = "unknown_model"


class MethodNotAllowed(HybridInferError):
    status_code = 405
    code = "method_not_allowed"


class RequestTimeout(HybridInferError):
    """The client sent its request too slowly; the connection is closed after the answer."""

    status_code = 408
    code = "request_timeout"

    def headers(self) -> dict[str, str]:
        return {"Connection": "close"}


class Conflict(HybridInferError):
    """The request contradicts state that exists already."""

    status_code = 409
    code = "conflict"


class StoreConflict(Conflict):
    """A write broke a uniqueness rule (the row exists already)."""


class ConcurrentChange(StoreConflict):
    """Another replica moved the policy version's state first (compare-and-set lost)."""

    code = "policy_changed_concurrently"


class PolicyConflict(Conflict):
    """A policy version that exists already was sent with another body (versions are
    immutable)."""

    code = "policy_version_exists"


class InvalidTransition(Conflict):
    """A canary move the version's current state does not allow."""

    code = "invalid_transition"


class IdempotencyKeyReused(Conflict):
    """An ``Idempotency-Key`` sent again with another body."""

    code = "idempotency_key_reused"


class PayloadTooLarge(HybridInferError):
    status_code = 413
    code = "payload_too_large"


class RateLimited(HybridInferError):
    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after_s: float, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after_s = retry_after_s

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(max(1, round(self.retry_after_s)))}


class BudgetExhausted(RateLimited):
    """The policy's (or the key's) spend budget for the window is used up."""

    code = "budget_exhausted"


class UpstreamError(HybridInferError):
    status_code = 502
    code = "upstream_failed"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        upstream_status: int | None = None,
    ) -> None:
        super().__init__(message, code=code, details=details)
        self.upstream_status = upstream_status
        """The upstream's HTTP status, when it answered with one (retries read it)."""


class UpstreamUnavailable(UpstreamError):
    code = "upstream_unavailable"


class UpstreamRejected(UpstreamError):
    code = "upstream_rejected"


class NoCapacity(HybridInferError):
    """Nothing can take the request now; with ``retry_after_s`` (the obstacle passes by itself,
    e.g. an open breaker's cool-down) the answer carries ``Retry-After``."""

    status_code = 503
    code = "no_capacity"

    def __init__(
        self, message: str, *, code: str | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.retry_after_s = retry_after_s

    def headers(self) -> dict[str, str]:
        if self.retry_after_s is None:
            return {}
        return {"Retry-After": str(max(1, round(self.retry_after_s)))}


class Overloaded(NoCapacity):
    """Shed, not queued: the gateway or a node is past its queue bound; try again shortly."""

    code = "overloaded"

    def __init__(self, message: str, *, retry_after_s: float, code: str | None = None) -> None:
        super().__init__(message, code=code, retry_after_s=retry_after_s)


class ServiceUnavailable(HybridInferError):
    """A service of our own (the store, cache or queue our state lives in, the names process)
    cannot be reached."""

    status_code = 503
    code = "service_unavailable"


class PseudonymisationFailed(HybridInferError):
    """Personal data could not be replaced before a public-zone call, or its values could not
    be put back in the answer: the subtask fails closed (nothing more goes to the public zone,
    no placeholder is ever passed off as a value)."""

    status_code = 503
    code = "pseudonymisation_failed"


class StoreUnavailable(ServiceUnavailable):
    code = "store_unavailable"


class CacheUnavailable(ServiceUnavailable):
    """The cache server cannot be reached (or answered with an error)."""

    code = "cache_unavailable"


class QueueUnavailable(ServiceUnavailable):
    """The queue server cannot be reached (or refused an operation)."""

    code = "queue_unavailable"


class NamesUnavailable(ServiceUnavailable):
    """The process that reads names and places stopped (another one is starting) or was
    closed: the privacy gate reads that as personal data and fails closed."""

    code = "names_unavailable"


class RateLimitUnavailable(ServiceUnavailable):
    """Fail-closed, and the shared counters cannot be reached."""

    code = "rate_limit_unavailable"

    def headers(self) -> dict[str, str]:
        return {"Retry-After": "1"}


class DeadlineExceeded(HybridInferError):
    status_code = 504
    code = "deadline_exceeded"

    def __init__(self, message: str, *, code: str | None = None, loop_lagged: bool = False) -> None:
        super().__init__(message, code=code)
        self.loop_lagged = loop_lagged
        """The timer that ended the wait fired late: the gateway's own event loop was behind,
        so the time ran out here, not necessarily at the upstream."""


class ConfigError(HybridInferError):
    code = "invalid_config"
