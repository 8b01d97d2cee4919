"""``hybridinfer policy validate|apply|list|diff|canary|promote|rollback``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from hybridinfer.cli.output import call_gateway, cli_errors
from hybridinfer.policy.document import load_policy

url_option = click.option("--url", default="http://127.0.0.1:8080", show_default=True)
key_option = click.option("--key", envvar="HYBRIDINFER_API_KEY", help="Admin API key.")


@click.group()
def policy() -> None:
    """Routing policies: validate, apply, list, diff, canary, promote, rollback."""


@policy.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def validate(file: Path) -> None:
    """Check a policy file (schema and CEL conditions) without applying it."""
    with cli_errors():
        compiled = load_policy(file)
    click.echo(f"{file}: policy {compiled.version} is valid ({len(compiled.rules)} rules)")


@policy.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--stage", is_flag=True, help="Store it without activating (for a canary).")
@url_option
@key_option
def apply(file: Path, stage: bool, url: str, key: str | None) -> None:
    """Validate, store and activate (or only stage) a policy version on a running gateway."""
    path = "/v1/policies?stage=true" if stage else "/v1/policies"
    result = call_gateway(url, key, path, file.read_bytes(), "application/yaml")
    click.echo(
        f"policy {result['version']} is {result['status']} (thresholds: {result['thresholds']})"
    )


@policy.command("list")
@url_option
@key_option
def list_(url: str, key: str | None) -> None:
    """Policy versions, newest first."""
    result = call_gateway(url, key, "/v1/policies")
    for item in result["policies"]:
        mark = "*" if item["version"] == result["active"] else " "
        click.echo(f"{mark} {item['version']:<24} {item['status']:<8} by {item['author']}")


@policy.command()
@click.argument("first")
@click.argument("second")
@url_option
@key_option
def diff(first: str, second: str, url: str, key: str | None) -> None:
    """A unified diff of two stored versions' YAML, FIRST to SECOND."""
    result = call_gateway(url, key, f"/v1/policies/{quote(first)}/diff/{quote(second)}")
    click.echo(result["diff"] or f"{first} and {second} are the same", nl=False)


def _serving(result: dict[str, Any]) -> str:
    canary = result["canary"]
    split = "" if canary is None else f"; canary {canary['version']} at {canary['percent']:g} %"
    return f"active {result['active']}{split}"


@policy.command()
@click.argument("version")
@click.option(
    "--percent",
    type=click.FloatRange(0.0, 100.0, min_open=True),
    help="Share of traffic; the next step of 5 → 20 → 50 → 100 when not given.",
)
@click.option("--auto", is_flag=True, help="Walk the steps by itself, guarded (guard: block).")
@click.option("--dwell", type=click.FloatRange(0.0, min_open=True), help="With --auto: s per step.")
@click.option("--min-requests", type=click.IntRange(1), help="With --auto: requests per step.")
@url_option
@key_option
def canary(
    version: str,
    percent: float | None,
    auto: bool,
    dwell: float | None,
    min_requests: int | None,
    url: str,
    key: str | None,
) -> None:
    """Send a share of the traffic to a stored VERSION (stable per routing key); with
    ``--auto``, walk 5 → 20 → 50 → 100 % and roll back on a guard breach."""
    if auto:
        wishes = {"dwell_s": dwell, "min_requests": min_requests}
        body = json.dumps({k: v for k, v in wishes.items() if v is not None}).encode()
        walk = call_gateway(url, key, f"/v1/policies/{quote(version)}/walk", body)
        click.echo(
            f"walking {version}: {walk['percent']:g} % now, steps {walk['settings']['steps']}"
        )
        return
    body = json.dumps({} if percent is None else {"percent": percent}).encode()
    _move("canary", version, url, key, body)


@policy.command()
@click.argument("version")
@url_option
@key_option
def promote(version: str, url: str, key: str | None) -> None:
    """Make the canary VERSION active for all traffic."""
    _move("promote", version, url, key)


@policy.command()
@click.argument("version")
@url_option
@key_option
def rollback(version: str, url: str, key: str | None) -> None:
    """End the canary VERSION, or restore the version active before VERSION."""
    _move("rollback", version, url, key)


def _move(action: str, version: str, url: str, key: str | None, body: bytes = b"") -> None:
    click.echo(_serving(call_gateway(url, key, f"/v1/policies/{quote(version)}/{action}", body)))
