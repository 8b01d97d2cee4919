"""The one sentence of why a decision was taken, true of how it was taken: when a rule or the
prompt's difficulty put a candidate first that did not score best, it says so and names the
one that did ("rule 'light-work-stays-private' put local first; cloud scored higher")."""

from __future__ import annotations

from hybridinfer.core.decision import Candidate, Cascade, Verdict
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.policy.document import CompiledRule
from hybridinfer.route.context import RouteOptions


def where(candidate: Candidate) -> str:
    return f"{candidate.deployment.model} on {candidate.node.id} ({candidate.node.tier.value})"


def explain(
    subtask: Subtask,
    options: RouteOptions,
    ranked: list[Candidate],
    candidates: list[Candidate],
    cascade: Cascade | None,
    rule: CompiledRule | None,
    verdict: Verdict | None,
) -> str:
    """The decision's reason: why the first of ``ranked`` runs, then the rest in brief."""
    chosen, fallbacks = ranked[0], ranked[1:]
    if cascade is not None:
        head = (
            f"Cascade: {where(chosen)} runs first as the cheapest and fastest; "
            f"escalate to {where(cascade.escalate_to[0])} "
            f"when its confidence is below {cascade.threshold:.3g}"
        )
    elif options.route != "auto":
        head = f"Forced to the {options.route} tier by options.route: {where(chosen)}"
    else:
        head = _scored(options, ranked, rule, verdict)
    if rule is not None:
        head = f"Rule {rule.rule.name!r} ({rule.rule.when}) → {rule.rule.action}. {head}"
    elif verdict is not None and options.route == "auto":
        head = f"{verdict.sentence()[0].upper()}{verdict.sentence()[1:]}. {head}"
    rejected: dict[str, int] = {}
    for candidate in candidates:
        if candidate.rejected_by is not None:
            rejected[candidate.rejected_by] = rejected.get(candidate.rejected_by, 0) + 1
    tail = [f"{len(fallbacks)} fallback(s)"]
    tail += [f"{count} rejected by {name}" for name, count in sorted(rejected.items())]
    if subtask.privacy_mode == "pseudonymise":
        tail.append("privacy mode pseudonymise: personal data replaced before any public call")
    elif subtask.privacy is Privacy.SENSITIVE:
        tail.append("privacy mode private: sensitive data kept in the private zone")
    return f"{head}; {', '.join(tail)}."


def _scored(
    options: RouteOptions,
    ranked: list[Candidate],
    rule: CompiledRule | None,
    verdict: Verdict | None,
) -> str:
    chosen = ranked[0]
    best = max(ranked, key=lambda c: c.score or 0.0)
    quality = (
        f"quality {chosen.deployment.quality:.3f}"
        if chosen.expected_quality is None
        else f"expected quality {chosen.expected_quality:.3f} on this prompt"
    )
    facts = (
        f"~{chosen.expected_latency_ms:.1f} ms, cost {chosen.deployment.cost_per_call:g}, {quality}"
    )
    if best is chosen or (best.score or 0.0) <= (chosen.score or 0.0):
        return f"{where(chosen)} scores best for prefer={options.prefer} ({facts})"
    by = "the rule" if rule is not None else "the difficulty" if verdict is not None else "order"
    return (
        f"{by} put {where(chosen)} first ({facts}); {where(best)} scored higher for "
        f"prefer={options.prefer} ({best.score or 0.0:.2f} vs {chosen.score or 0.0:.2f})"
    )
