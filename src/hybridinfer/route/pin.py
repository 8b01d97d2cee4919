"""Pin a decision to one named model (OpenAI's ``model`` field, ``options.model``).

The router decides as usual; pinning then keeps only the named model's deployments, so the
trace still shows every candidate, with the others rejected by ``model``. A model nobody serves
is a 404; a model whose every deployment was filtered out fails with that filter's reason.
"""

from __future__ import annotations

from dataclasses import replace

from hybridinfer.core.decision import Candidate, Decision
from hybridinfer.errors import NoCapacity, PayloadTooLarge, PrivacyViolation, UnknownModel


def pin(decision: Decision, model: str | None) -> Decision:
    """``decision`` restricted to ``model`` (unchanged when ``model`` is None or ``auto``)."""
    if model is None or model == "auto":
        return decision
    named = [c for c in decision.candidates if c.deployment.model == model]
    if not named:
        raise UnknownModel(f"no deployment serves model {model!r}; GET /v1/models lists them")
    usable = [c for c in [decision.chosen, *decision.fallbacks] if c.deployment.model == model]
    if not usable:
        raise _refusal(model, named)
    # The decision's candidates may be shared with other decisions (``route/snapshot.py``):
    # the ones the pin rejects are copies.
    candidates = [
        replace(candidate, rejected_by="model", detail=f"the request pins model {model}")
        if candidate.deployment.model != model and candidate.rejected_by is None
        else candidate
        for candidate in decision.candidates
    ]
    chosen = usable[0]
    where = f"{model} on {chosen.node.id} ({chosen.node.tier.value})"
    return Decision(
        subtask_id=decision.subtask_id,
        chosen=chosen,
        fallbacks=usable[1:],
        candidates=candidates,
        reason=f"Pinned by the request to {where}; {len(usable) - 1} fallback(s).",
        policy_version=decision.policy_version,
        cascade=None,
        rules=list(decision.rules),
    )


def _refusal(model: str, named: list[Candidate]) -> Exception:
    rules = {c.rejected_by for c in named}
    details = "; ".join(sorted({f"{c.deployment.id}: {c.detail}" for c in named}))
    if "privacy" in rules:
        return PrivacyViolation(f"model {model} is outside the private zone ({details})")
    if rules == {"input_limit"}:
        return PayloadTooLarge(f"the input is too long for model {model} ({details})")
    return NoCapacity(f"model {model} cannot serve this request now ({details})")
