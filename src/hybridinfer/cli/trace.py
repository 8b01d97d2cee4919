"""``hybridinfer trace REQUEST_ID``: a request's trace, printed as a tree."""

from __future__ import annotations

from typing import Any

import click

from hybridinfer.cli.output import call_gateway


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def render_trace(trace: dict[str, Any]) -> list[str]:
    """The tree: stages with their timing; plan, decisions and attempts under their stage."""
    timings = trace.get("timings_ms", {})
    lines = [
        f"request {trace['request_id']}  task={trace.get('task')}  status={trace['status']}  "
        f"total={_ms(timings.get('total'))}"
    ]
    plan = trace.get("plan") or {}
    sections: list[tuple[str, list[str]]] = [
        ("gateway", []),
        (
            "decompose",
            [
                f"{s['id']}: {s['capability']}/{s.get('task')} privacy={s['privacy']} "
                f"size={s['size']} depends_on={','.join(s['depends_on']) or '-'}"
                for s in plan.get("subtasks", [])
            ],
        ),
        ("route", [_decision_line(d) for d in trace.get("decisions", [])]),
        (
            "execute",
            [
                f"{a['subtask']}: {a['role']} {a['tier']}/{a['node']}/{a['model']} "
                f"{a['status']} {_ms(a['latency_ms'])}"
                + (f" confidence={a['confidence']:.3f}" if a.get("confidence") is not None else "")
                + (f" error={a['error_code']}: {a['error']}" if a.get("error_code") else "")
                for a in trace.get("attempts", [])
            ],
        ),
        (
            "aggregate",
            [f"error {trace['error']['code']}: {trace['error']['message']}"]
            if trace.get("error")
            else [],
        ),
    ]
    for index, (stage, children) in enumerate(sections):
        last = index == len(sections) - 1
        lines.append(f"{'└─' if last else '├─'} {stage} {_ms(timings.get(stage))}")
        for child_index, child in enumerate(children):
            branch = "└─" if child_index == len(children) - 1 else "├─"
            lines.append(f"{'   ' if last else '│  '}{branch} {child}")
    return lines


def _decision_line(decision: dict[str, Any]) -> str:
    candidates = ", ".join(
        f"{c['deployment']}={c['score']}"
        if c["rejected_by"] is None
        else f"{c['deployment']}✗{c['rejected_by']}"
        for c in decision["candidates"]
    )
    return (
        f"{decision['subtask']} → {decision['chosen']} [{decision['policy_version']}] "
        f"{decision['reason']} (candidates: {candidates})"
    )


@click.command()
@click.argument("request_id")
@click.option("--url", default="http://127.0.0.1:8080", show_default=True, help="Gateway URL.")
@click.option("--key", envvar="HYBRIDINFER_API_KEY", help="API key (or HYBRIDINFER_API_KEY).")
def trace(request_id: str, url: str, key: str | None) -> None:
    """Print the trace of one request as a tree."""
    body = call_gateway(url, key, f"/v1/traces/{request_id}")
    click.echo("\n".join(render_trace(body)))
