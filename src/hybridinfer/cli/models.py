"""``hybridinfer models build|publish``: train the bundled models; publish a version."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from hybridinfer.cli.output import (
    build_models_with_progress,
    cli_errors,
    describe_card,
    run_async,
)
from hybridinfer.models.artifact import Manifest
from hybridinfer.models.store import ModelStore
from hybridinfer.objectstore import open_store
from hybridinfer.settings import Settings, load_settings


@click.group()
def models() -> None:
    """Bundled demo models."""


@models.command("build")
@click.option(
    "--models-dir",
    type=click.Path(path_type=Path),
    default=Path(".hybridinfer/models"),
    show_default=True,
)
@click.option("--force", is_flag=True, help="Retrain even if up-to-date models exist.")
def build(models_dir: Path, force: bool) -> None:
    """Train from data in PyPI packages, export ONNX, write a card per model (the four
    classifiers, and the MiniLM embedder when torch is installed)."""
    for card in build_models_with_progress(models_dir, force=force):
        click.echo(describe_card(card))


async def _publish(settings: Settings, name: str, version: str, source: Path) -> Manifest:
    store = open_store(settings)
    try:
        card = orjson.loads((source / "card.json").read_bytes())
        model = (source / "model.onnx").read_bytes()
        return await ModelStore(store, settings.keep_model_versions).publish(
            name, version, model, dict(card)
        )
    finally:
        await store.aclose()


@models.command("publish")
@click.argument("name")
@click.option("--version", "version", required=True, help="The new version's name (e.g. 4).")
@click.option(
    "--from",
    "source",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="Folder holding model.onnx and card.json.",
)
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--data-dir", type=click.Path(path_type=Path), default=None)
def publish(
    name: str, version: str, source: Path, config: Path | None, data_dir: Path | None
) -> None:
    """Publish a model version to the object store; nodes that pull pick it up on their next
    poll, verify its sha256 and switch to it. The last `keep_model_versions` are kept."""
    with cli_errors():
        settings = load_settings(config, data_dir=data_dir)
        manifest = run_async(_publish(settings, name, version, source))
    click.echo(f"published {name} version {version} sha256 {manifest.sha256}")
