"""Stage ``aggregate``: merge subtask outputs into one answer, or one clear error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hybridinfer.core.plan import Plan
from hybridinfer.decompose.rules import split_reference
from hybridinfer.errors import HybridInferError
from hybridinfer.execute.executor import SubtaskResult, resolve_inputs
from hybridinfer.privacy.scrub import scrub


def summarise(result: SubtaskResult) -> dict[str, Any]:
    """One entry of the response's ``subtasks`` list."""
    attempt = result.attempt
    summary: dict[str, Any] = {
        "id": result.subtask.id,
        "capability": result.subtask.capability,
        "tier": attempt.tier if attempt else None,
        "node": attempt.node if attempt else None,
        "model": attempt.model if attempt else None,
        "role": attempt.role if attempt else None,
        "status": result.status,
        "latency_ms": round(result.latency_ms, 3),
        "reason": result.reason,
    }
    if result.degraded:
        summary["degraded"] = result.degraded
    if result.reused is not None:
        summary["reused"] = result.reused
    if result.error is not None:
        error = result.error
        summary["error"] = {"code": error.error_code, "message": scrub(error.message)}
    return summary


def aggregate(
    plan: Plan, results: Mapping[str, SubtaskResult], request_inputs: Mapping[str, Any]
) -> tuple[str, dict[str, Any]]:
    """``("ok"|"partial", outputs)``; raises the first hard failure's error.

    A soft subtask's failure leaves its outputs out and marks the answer ``partial``; a hard
    one fails the request, because a 200 must never hide a failed step.
    """
    status = "ok"
    for subtask in plan.subtasks:
        result = results[subtask.id]
        if result.status == "ok":
            continue
        if not subtask.soft:
            assert result.error is not None
            raise result.error
        status = "partial"
    answered = {
        name: reference
        for name, reference in plan.outputs.items()
        if (source := split_reference(reference)[0]) == "inputs" or results[source].status == "ok"
    }
    return status, resolve_inputs(answered, request_inputs, results)


__all__ = ["HybridInferError", "aggregate", "summarise"]
