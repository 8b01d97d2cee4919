"""``hybridinfer policy replay|walk|pause|resume|abort``: check a change before it serves,
and steer a guarded canary walk while it does."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import click

from hybridinfer.cli.output import call_gateway

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0}

url_option = click.option("--url", default="http://127.0.0.1:8080", show_default=True)
key_option = click.option("--key", envvar="HYBRIDINFER_API_KEY", help="Admin API key.")


def parse_duration(text: str) -> float:
    """``90s``, ``15m``, ``1h``, ``2d`` (or plain seconds) as seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if found is None:
        raise click.BadParameter(f"{text!r} is not a duration like 90s, 15m, 1h or 2d")
    return float(found.group(1)) * _UNITS[found.group(2) or "s"]


def _side(figures: dict[str, Any]) -> str:
    quality = figures["quality"]
    return (
        f"cloud {figures['cloud_share'] * 100:5.1f} %  spend {figures['spend']:.6g}  "
        f"quality {'-' if quality is None else f'{quality:.3f}'}  "
        f"p99 {figures['latency_p99_ms']:.1f} ms"
    )


def render_report(report: dict[str, Any]) -> str:
    """The replay report as a table an operator reads: logged vs predicted per capability."""
    lines = [f"replay of {report['version']} on {report['traces']} logged traces"]
    for name, entry in {**report["capabilities"], "all": report["overall"]}.items():
        moves = ", ".join(f"{k} {v}" for k, v in entry["moves"].items()) or "none"
        lines.append(f"{name}: {entry['changed']}/{entry['decisions']} changed ({moves})")
        lines.append(f"  logged     {_side(entry['logged'])}")
        lines.append(f"  predicted  {_side(entry['predicted'])}")
        if entry["unknown_confidence"]:
            lines.append(f"  escalation unknown for {entry['unknown_confidence']} (never ran)")
        if entry["gate_unknown"]:
            lines.append(f"  privacy gate never seen for {entry['gate_unknown']} sent out")
    router = report["router"]
    lines.append(f"router: {router['note']}")
    if router["rescored"]:
        lines.append(f"  re-scored  {_side(router['sample']['predicted'])}")
    lines.append(f"privacy violations: {report['privacy_violations']}")
    lines.extend(f"guard breached: {breach['sentence']}" for breach in report["breaches"])
    lines.append("passed" if report["passed"] else "FAILED")
    return "\n".join(lines)


@click.command()
@click.argument("version")
@click.option("--since", help="Logged traces of this long ago to now: 90s, 15m, 1h, 2d.")
@click.option("--traces", type=click.IntRange(1, 100_000), help="The last N logged traces.")
@click.option(
    "--router",
    "router_artifact",
    help="A chat difficulty head (path on the gateway) replayed on the retained prompts.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@url_option
@key_option
def replay(
    version: str,
    since: str | None,
    traces: int | None,
    router_artifact: str | None,
    as_json: bool,
    url: str,
    key: str | None,
) -> None:
    """What VERSION would have done on logged traffic (no model called); exits 1 when a
    guard would break or a decision would leave the private zone."""
    if since is not None and traces is not None:
        raise click.UsageError("give --since or --traces, not both")
    wish: dict[str, float | str] = {"traces": traces} if traces is not None else {}
    if traces is None:
        wish["since_s"] = parse_duration(since or "1h")
    if router_artifact is not None:
        wish["router_artifact"] = router_artifact
    path = f"/v1/policies/{quote(version)}/replay"
    report = call_gateway(url, key, path, json.dumps(wish).encode())
    click.echo(json.dumps(report, indent=2) if as_json else render_report(report))
    if not report["passed"]:
        raise SystemExit(1)


def _steer(move: str) -> click.Command:
    @click.command(move, help=f"{move.capitalize()} the guarded walk of VERSION.")
    @click.argument("version")
    @url_option
    @key_option
    def command(version: str, url: str, key: str | None) -> None:
        walk = call_gateway(url, key, f"/v1/policies/{quote(version)}/{move}", b"")
        click.echo(f"walk of {version}: {walk['status']} at {walk['percent']:g} %")

    return command


@click.command("walk")
@click.argument("version")
@url_option
@key_option
def walk(version: str, url: str, key: str | None) -> None:
    """The guarded walk of VERSION: its step and the figures that moved it."""
    click.echo(json.dumps(call_gateway(url, key, f"/v1/policies/{quote(version)}/walk"), indent=2))


def add_change_commands(group: click.Group) -> None:
    """Put ``replay``, ``walk``, ``pause``, ``resume`` and ``abort`` on ``policy``."""
    for command in (replay, walk, *(_steer(move) for move in ("pause", "resume", "abort"))):
        group.add_command(command)
