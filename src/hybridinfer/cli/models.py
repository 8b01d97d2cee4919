"""``hybridinfer models build``: train and export the bundled models."""

from __future__ import annotations

from pathlib import Path

import click

from hybridinfer.cli.output import build_models_with_progress


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
    """Train from data in PyPI packages, export ONNX, write a card per model."""
    for card in build_models_with_progress(models_dir, force=force):
        latency = card["latency_ms"]["p50"]
        click.echo(
            f"{card['name']:<16} accuracy {card['metrics']['accuracy']:.3f}  "
            f"p50 {latency:.3f} ms  {card['size_bytes'] / 1e6:.1f} MB"
        )
