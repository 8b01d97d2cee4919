"""``hybridinfer keys create``: add an API key to the store."""

from __future__ import annotations

from pathlib import Path

import click

from hybridinfer.cli.output import cli_errors, run_async
from hybridinfer.keys import SCOPES, KeyRing
from hybridinfer.settings import load_settings
from hybridinfer.store.sql import SqlStore


async def _create(store_url: str, name: str, scopes: set[str]) -> str:
    store = SqlStore(store_url)
    try:
        await store.migrate()
        return await KeyRing(store, None).create(name, scopes)
    finally:
        await store.close()


@click.group()
def keys() -> None:
    """API keys."""


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
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--data-dir", type=click.Path(path_type=Path), default=None)
def create(name: str, scopes: tuple[str, ...], config: Path | None, data_dir: Path | None) -> None:
    """Create a key and print it (it is stored hashed: this is the only time it is shown)."""
    with cli_errors():
        settings = load_settings(config, data_dir=data_dir)
    click.echo(run_async(_create(settings.resolved_store_url, name, set(scopes))))
