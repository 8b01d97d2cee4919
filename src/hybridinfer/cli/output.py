"""How the CLI talks to people: logging set-up, errors without stack traces, progress bars."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from hybridinfer.errors import HybridInferError

Result = TypeVar("Result")


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def run_async(coroutine: Coroutine[Any, Any, Result]) -> Result:
    """Run on uvloop when it is installed; turn our errors into a clean exit."""
    try:
        import uvloop

        factory: Any = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings uvloop
        factory = None
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(coroutine)
    except HybridInferError as error:
        raise click.ClickException(error.message) from None


@contextmanager
def cli_errors() -> Iterator[None]:
    """Report a HybridInferError (bad config, missing model) as one line, exit code 1."""
    try:
        yield
    except HybridInferError as error:
        raise click.ClickException(error.message) from None


def build_models_with_progress(models_dir: Path, force: bool = False) -> list[dict[str, Any]]:
    """Train and export the bundled models (or reuse them), drawing a progress bar."""
    from hybridinfer.modelzoo import build_models

    bar: Any = None
    shown = 0

    def progress(step: str, done: int, total: int) -> None:
        nonlocal bar, shown
        if bar is None:
            bar = click.progressbar(length=total, label="building models", file=sys.stderr)
            bar.__enter__()
        bar.label = f"building models: {step}"
        bar.update(done - shown)
        shown = done

    try:
        cards = build_models(models_dir, progress=progress, force=force)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    return [card.to_dict() if hasattr(card, "to_dict") else dict(card) for card in cards]
