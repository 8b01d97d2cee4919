"""``hybridinfer keys create|list|rotate|revoke``.

``create`` writes to the store directly (it makes the first keys, before any gateway runs);
the others go through a running gateway's admin API, so that they are audited under the
caller's key and take effect at once on that replica (other replicas within the key cache's
30 s).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from hybridinfer.cli.output import call_gateway, cli_errors, run_async
from hybridinfer.control.keys import SCOPES, KeyRing
from hybridinfer.settings import load_settings
from hybridinfer.store.sql import SqlStore

url_option = click.option("--url", default="http://127.0.0.1:8080", show_default=True)
key_option = click.option("--key", envvar="HYBRIDINFER_API_KEY", help="Admin API key.")


async def _create(
    store_url: str, name: str, scopes: set[str], rate_limit: int | None, budget: float | None
) -> str:
    store = SqlStore(store_url)
    try:
        await store.migrate()
        return await KeyRing(store, None).create(name, scopes, None, rate_limit, budget)
    finally:
        await store.close()


@click.group()
def keys() -> None:
    """API keys: create, list, rotate, revoke."""


@keys.command("create")
@click.option("--name", required=True, help="Who or what the key is for.")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    type=click.Choice(sorted(SCOPES)),
    default=("infer",),
    show_default=True,
)
@click.option("--rate-limit", type=click.IntRange(min=1), help="Own requests per minute.")
@click.option("--budget", type=click.FloatRange(min=0.0), help="Own cloud spend per period.")
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--data-dir", type=click.Path(path_type=Path), default=None)
def create(
    name: str,
    scopes: tuple[str, ...],
    rate_limit: int | None,
    budget: float | None,
    config: Path | None,
    data_dir: Path | None,
) -> None:
    """Create a key and print it (it is stored hashed: this is the only time it is shown)."""
    with cli_errors():
        settings = load_settings(config, data_dir=data_dir)
    key = run_async(_create(settings.resolved_store_url, name, set(scopes), rate_limit, budget))
    click.echo(key)


@keys.command("list")
@url_option
@key_option
def list_(url: str, key: str | None) -> None:
    """Every key: id, name, scopes, limits and state (never the key itself)."""
    for item in call_gateway(url, key, "/v1/keys")["keys"]:
        state = "revoked" if item["revoked_at"] else "expiring" if item["expires_at"] else "active"
        limits = f"rate={item['rate_limit_per_minute'] or '-'} budget={item['budget'] or '-'}"
        scopes = ",".join(item["scopes"])
        click.echo(f"{item['id']}  {state:<8} {scopes:<12} {limits}  {item['name']}")


@keys.command()
@click.argument("key_id")
@click.option("--grace", type=click.FloatRange(min=0.0), help="Seconds the old key keeps working.")
@url_option
@key_option
def rotate(key_id: str, grace: float | None, url: str, key: str | None) -> None:
    """Issue a successor of KEY_ID and print it; KEY_ID works until the grace period ends."""
    body = json.dumps({} if grace is None else {"grace_s": grace}).encode()
    result = call_gateway(url, key, f"/v1/keys/{key_id}/rotate", body)
    click.echo(result["key"])


@keys.command()
@click.argument("key_id")
@url_option
@key_option
def revoke(key_id: str, url: str, key: str | None) -> None:
    """Refuse KEY_ID from now on."""
    call_gateway(url, key, f"/v1/keys/{key_id}/revoke", b"")
    click.echo(f"revoked {key_id}")
