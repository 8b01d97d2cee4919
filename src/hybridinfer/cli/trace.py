"""``hybridinfer trace REQUEST_ID``: a request's trace, printed as a tree.

Stages in request-path order with their timings; under ``decompose`` the plan, under
``route`` each decision with every candidate (its score, or the rule that rejected it), under
``execute`` each attempt (when it started, how long it took, its error), under ``aggregate``
each subtask's outcome and the request's error.
"""

from __future__ import annotations

from typing import Any

import click

from hybridinfer.cli.output import call_gateway

Tree = tuple[str, list["Tree"]]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render_trace(trace: dict[str, Any]) -> list[str]:
    """The tree, one line per node, drawn with box characters."""
    timings = trace.get("timings_ms", {})
    header = (
        f"request {trace['request_id']}  task={trace.get('task')}  status={trace['status']}  "
        f"total={_ms(timings.get('total'))}"
    )
    if trace.get("policy_version"):
        header += f"  policy={trace['policy_version']}"
    if trace.get("trace_id"):
        header += f"  trace_id={trace['trace_id']}"
    plan = trace.get("plan") or {}
    stages: list[Tree] = [
        ("gateway", []),
        ("decompose", _plan_nodes(plan)),
        ("route", [_decision_node(d) for d in trace.get("decisions", [])]),
        ("execute", [(_attempt_line(a), []) for a in trace.get("attempts", [])]),
        ("aggregate", _outcome_nodes(plan, trace.get("error"))),
    ]
    lines = [header]
    for index, (stage, children) in enumerate(stages):
        offset = (trace.get("offsets_ms") or {}).get(stage)
        at = "" if offset is None else f" (at {offset:.2f} ms)"
        label = f"{stage} {_ms(timings.get(stage))}{at}"
        _draw((label, children), "", index == len(stages) - 1, lines)
    return lines


def _draw(node: Tree, prefix: str, last: bool, lines: list[str]) -> None:
    label, children = node
    lines.append(f"{prefix}{'└─' if last else '├─'} {label}")
    inner = prefix + ("   " if last else "│  ")
    for index, child in enumerate(children):
        _draw(child, inner, index == len(children) - 1, lines)


def _plan_nodes(plan: dict[str, Any]) -> list[Tree]:
    nodes: list[Tree] = []
    auto = plan.get("auto")
    if auto:
        nodes.append((f"task auto → {auto['task']}: {auto['reason']}", []))
    for s in plan.get("subtasks", []):
        line = (
            f"{s['id']}: {s['capability']}/{s.get('task')} privacy={s['privacy']} "
            f"size={s['size']} complexity={s.get('complexity')} "
            f"depends_on={','.join(s['depends_on']) or '-'}"
        )
        nodes.append((line + (" soft" if s.get("soft") else ""), []))
    return nodes


def _decision_node(decision: dict[str, Any]) -> Tree:
    label = (
        f"{decision['subtask']} → {decision['chosen']} ({decision['tier']}) "
        f"[policy {decision['policy_version']}] {decision['reason']}"
    )
    children: list[Tree] = [(_candidate_line(c, decision), []) for c in decision["candidates"]]
    if decision.get("fallbacks"):
        children.append((f"fallbacks: {', '.join(decision['fallbacks'])}", []))
    cascade = decision.get("cascade")
    if cascade:
        children.append(
            (
                f"cascade: escalate below confidence {cascade['threshold']} to "
                f"{', '.join(cascade['escalate_to'])}",
                [],
            )
        )
    return label, children


def _candidate_line(candidate: dict[str, Any], decision: dict[str, Any]) -> str:
    name = f"{candidate['deployment']} ({candidate['tier']}/{candidate['zone']})"
    if candidate["rejected_by"] is not None:
        detail = f": {candidate['detail']}" if candidate.get("detail") else ""
        return f"✗ {name} rejected by {candidate['rejected_by']}{detail}"
    mark = "✓" if candidate["deployment"] == decision["chosen"] else "·"
    return (
        f"{mark} {name} score={candidate['score']} "
        f"expected={_ms(candidate.get('expected_latency_ms'))} "
        f"quality={_number(candidate.get('quality'))} cost={candidate.get('cost_per_call')}"
    )


def _attempt_line(attempt: dict[str, Any]) -> str:
    line = (
        f"{attempt['subtask']}: {attempt['role']} {attempt['tier']}/{attempt['node']}/"
        f"{attempt['model']} {attempt['status']} {_ms(attempt['latency_ms'])}"
    )
    if attempt.get("started_ms") is not None:
        line += f" (at {attempt['started_ms']:.2f} ms)"
    if (attempt.get("number") or 1) > 1:
        line += f" try={attempt['number']} after {_ms(attempt.get('wait_ms'))} backoff"
    if attempt.get("confidence") is not None:
        line += f" confidence={attempt['confidence']:.3f}"
    if attempt.get("error_code"):
        line += f" error={attempt['error_code']}: {attempt['error']}"
    return line


def _outcome_nodes(plan: dict[str, Any], error: dict[str, Any] | None) -> list[Tree]:
    nodes: list[Tree] = []
    for result in plan.get("results", []):
        line = f"{result['id']}: {result['status']}"
        if result.get("error"):
            line += f" {result['error']['code']}: {result['error']['message']}"
        nodes.append((line, []))
    if error:
        nodes.append((f"error {error['code']}: {error['message']}", []))
    return nodes


@click.command()
@click.argument("request_id")
@click.option("--url", default="http://127.0.0.1:8080", show_default=True, help="Gateway URL.")
@click.option("--key", envvar="HYBRIDINFER_API_KEY", help="API key (or HYBRIDINFER_API_KEY).")
def trace(request_id: str, url: str, key: str | None) -> None:
    """Print the trace of one request as a tree."""
    body = call_gateway(url, key, f"/v1/traces/{request_id}")
    click.echo("\n".join(render_trace(body)))
