"""``hybridinfer policy validate|apply|list``."""

from __future__ import annotations

from pathlib import Path

import click

from hybridinfer.cli.output import call_gateway, cli_errors
from hybridinfer.route.policy import load_policy

url_option = click.option("--url", default="http://127.0.0.1:8080", show_default=True)
key_option = click.option("--key", envvar="HYBRIDINFER_API_KEY", help="Admin API key.")


@click.group()
def policy() -> None:
    """Routing policies: validate, apply, list."""


@policy.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def validate(file: Path) -> None:
    """Check a policy file (schema and CEL conditions) without applying it."""
    with cli_errors():
        compiled = load_policy(file)
    click.echo(f"{file}: policy {compiled.version} is valid ({len(compiled.rules)} rules)")


@policy.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@url_option
@key_option
def apply(file: Path, url: str, key: str | None) -> None:
    """Validate, store and activate a policy version on a running gateway."""
    result = call_gateway(url, key, "/v1/policies", file.read_bytes(), "application/yaml")
    click.echo(f"policy {result['version']} is active (thresholds: {result['thresholds']})")


@policy.command("list")
@url_option
@key_option
def list_(url: str, key: str | None) -> None:
    """Policy versions, newest first."""
    result = call_gateway(url, key, "/v1/policies")
    for item in result["policies"]:
        mark = "*" if item["version"] == result["active"] else " "
        click.echo(f"{mark} {item['version']:<24} {item['status']:<8} by {item['author']}")
