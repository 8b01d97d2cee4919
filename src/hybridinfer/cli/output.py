"""How the CLI talks to people: logging set-up, errors without stack traces, progress bars."""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from hybridinfer.errors import HybridInferError
from hybridinfer.observe import logs
from hybridinfer.observe.logs import LogFormat

Result = TypeVar("Result")


def configure_logging(level: str, log_format: LogFormat = "json") -> None:
    """Every logger to stderr, one JSON object per line (default) or text (``logs.py``)."""
    logs.configure_logging(level, log_format, sys.stderr)


def run_async(coroutine: Coroutine[Any, Any, Result]) -> Result:
    """Run on uvloop when it is installed (its listeners accepting connections in batches,
    ``listener.py``); turn our errors into a clean exit."""
    try:
        from hybridinfer.server.listener import new_event_loop

        factory: Any = new_event_loop
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


def call_gateway(
    url: str,
    key: str | None,
    path: str,
    body: bytes | None = None,
    content_type: str = "application/json",
) -> Any:
    """One admin API call; its error envelope becomes a one-line CLI error."""
    if not key:
        raise click.ClickException("an API key is needed: --key or HYBRIDINFER_API_KEY")
    headers = {"Authorization": f"Bearer {key}", "Content-Type": content_type}
    request = urllib.request.Request(f"{url.rstrip('/')}{path}", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        payload = json.loads(exc.read() or b"{}")
        raise click.ClickException(payload.get("error", {}).get("message", str(exc))) from None
    except (urllib.error.URLError, OSError) as exc:
        raise click.ClickException(f"cannot reach {url}: {exc}") from None
