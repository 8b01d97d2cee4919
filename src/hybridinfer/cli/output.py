"""How the CLI talks to people: logging set-up, errors without stack traces, progress bars,
what a gateway serves where."""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Coroutine, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hybridinfer.errors import HybridInferError
from hybridinfer.observe import logs
from hybridinfer.observe.logs import LogFormat

if TYPE_CHECKING:
    from hybridinfer.control.nodes import Placement

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
    """Build (or reuse) the default models, drawing a progress bar; say which were skipped and
    why (MiniLM without torch) rather than fail."""
    from hybridinfer.modelzoo import build_bundle

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
        bundle = build_bundle(models_dir, progress=progress, force=force)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    for name, reason in bundle.skipped.items():
        click.echo(click.style("warning: ", fg="yellow") + f"{name} not built: {reason}", err=True)
    return bundle.cards


def describe_card(card: dict[str, Any]) -> str:
    """One line per built model: its accuracy (classifiers) or dimension (embedders), median
    latency and size."""
    metrics = card.get("metrics", {})
    measure = (
        f"accuracy {metrics['accuracy']:.3f}"
        if "accuracy" in metrics
        else f"dimension {card.get('dimension', '?')}"
    )
    latency = card["latency_ms"]["p50"]
    size = card["size_bytes"] / 1e6
    return f"{card['name']:<16} {measure:<14}  p50 {latency:.3f} ms  {size:.1f} MB"


def needed_capabilities(tasks: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Capability → the tasks whose plans need it, from task → its subtasks' capabilities."""
    needed: dict[str, list[str]] = {}
    for task, capabilities in sorted(tasks.items()):
        for capability in capabilities:
            if task not in needed.setdefault(capability, []):
                needed[capability].append(task)
    return needed


def capability_lines(placements: Iterable[Placement], needed: Mapping[str, list[str]]) -> list[str]:
    """What ``up`` says at start: a heading, then one line per capability with every place
    that serves it ("model on node (tier)"), or, for one the rule table needs and no node
    serves, the tasks that will answer 503 for want of it."""
    served: dict[str, list[str]] = {}
    for place in placements:
        served.setdefault(place.capability, []).append(
            f"{place.model} on {place.node} ({place.tier})"
        )
    capabilities = sorted({*served, *needed})
    width = max((len(capability) for capability in capabilities), default=0)
    lines = ["serving, by capability (model on node (tier)):"]
    for capability in capabilities:
        where = served.get(capability)
        if where:
            lines.append(f"  {capability:<{width}}  {', '.join(where)}")
        else:
            tasks = ", ".join(needed[capability])
            lines.append(f"  {capability:<{width}}  not served: {tasks} answer 503 no_capacity")
    return lines


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
