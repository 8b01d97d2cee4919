"""``hybridinfer up`` (everything on one host) and ``hybridinfer gateway`` (the control plane)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click
import uvicorn
from pydantic import SecretStr

from hybridinfer.cli.output import (
    build_models_with_progress,
    capability_lines,
    cli_errors,
    configure_logging,
    needed_capabilities,
    run_async,
)
from hybridinfer.control.localtier import EMBEDDING_MODEL
from hybridinfer.control.plane import ControlPlane
from hybridinfer.core.heap import freeze_startup_heap
from hybridinfer.gateway.app import create_app
from hybridinfer.models.catalog import versions
from hybridinfer.observe.workers import exposition_directory, socket_path
from hybridinfer.server.llmserver import default_specs, llm_extra_installed, start_servers
from hybridinfer.server.serving import gateway_server_config
from hybridinfer.server.supervisor import Supervised
from hybridinfer.server.workers import (
    WorkerHeader,
    WorkerPool,
    require_shared_state,
    worker_command,
    worker_sockets,
)
from hybridinfer.settings import Settings, load_settings


def _print_key(generated: str | None) -> None:
    if generated is not None:
        click.echo(
            "Admin API key (shown once; keep it): "
            + click.style(generated, bold=True)
            + "\n  export HYBRIDINFER_API_KEY="
            + generated,
            err=True,
        )


NODE_WAIT_S = 60.0
"""How long ``up`` waits for the nodes it starts to register before it says it is up."""
LOADED_POLL_S = 0.2
"""How often a started gateway checks whether its background models have loaded."""
CLOUD_NODE_ID = "cloud-1"


async def serve_gateway(
    settings: Settings, cloud_node: list[str] | None = None, own_nodes: Sequence[str] = ()
) -> None:
    """Run the gateway until interrupted; with ``cloud_node``, run that node process beside it.

    ``own_nodes`` are the static nodes (of ``settings``) the caller started itself. Readiness
    waits for them and the cloud node, and "is up" is said once they are all ready (or once
    ``NODE_WAIT_S`` has passed, saying which did not come).
    """
    plane = ControlPlane(settings)
    expected = [*own_nodes, *([CLOUD_NODE_ID] if cloud_node is not None else [])]
    plane.services.nodes.expect(expected)
    app: Any = create_app(plane, on_start=_print_key)
    refuse_now = app.state.refuse_now
    if settings.worker_index is not None:
        app = WorkerHeader(app, settings.worker_index)
        refuse_now = app.named(refuse_now)
    config = gateway_server_config(
        app, settings, timeout_graceful_shutdown=5, refuse_now=refuse_now
    )
    server = GracefulServer(config)
    child: Supervised | None = None
    frozen: asyncio.Task[None] | None = None
    serving = asyncio.create_task(server.serve(sockets=worker_sockets(settings)))
    try:
        # uvicorn exposes readiness only as a flag; poll it briefly.
        while not server.started and not serving.done():  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        if server.started:
            freeze_startup_heap(settings.gc_young_threshold)
            frozen = asyncio.create_task(
                _freeze_once_loaded(plane, settings.gc_young_threshold), name="freeze-loaded-heap"
            )
            if cloud_node is not None:
                env = {**os.environ, "HYBRIDINFER_NODE_TOKEN": _secret(settings.node_token)}
                child = Supervised("cloud node", cloud_node, env)
                await child.start()
            if not settings.worker_index:  # of several workers, worker 0 alone reports
                await _report_start(plane, serving, settings)
        await serving
    finally:
        if frozen is not None:
            frozen.cancel()
        if child is not None:
            await child.stop()


async def _freeze_once_loaded(plane: ControlPlane, young_threshold: int) -> None:
    """Freeze the heap again once the name and difficulty models have loaded (they load in
    the background after the server starts). Left to the collector, their objects made every
    full collection under load a pause of about 180 ms, a stall every 20 s or so at 300 RPS
    (``bench/loop_stalls.py``)."""
    while plane.loading() is not None:  # noqa: ASYNC110 -- loading is a flag, polled briefly
        await asyncio.sleep(LOADED_POLL_S)
    freeze_startup_heap(young_threshold)


async def _report_start(
    plane: ControlPlane, serving: asyncio.Task[None], settings: Settings
) -> None:
    """Once the expected nodes are ready (or not within ``NODE_WAIT_S``): what is served where,
    and that the gateway is up."""
    nodes = plane.services.nodes
    loop = asyncio.get_running_loop()
    deadline = loop.time() + NODE_WAIT_S
    while nodes.awaited() and loop.time() < deadline:
        if serving.done():  # stopped (a signal) before the nodes came
            return
        await asyncio.sleep(0.05)
    rules = plane.decomposer.rules.tasks
    needed = needed_capabilities(
        {name: [step.capability for step in rule.subtasks] for name, rule in rules.items()}
    )
    for line in capability_lines(nodes.placements(), needed):
        click.echo(line, err=True)
    url = f"{settings.scheme}://{settings.host}:{settings.port}"
    missing = nodes.awaited()
    if not missing:
        click.echo(f"hybridinfer is up on {url}", err=True)
        return
    click.echo(
        click.style("warning: ", fg="yellow")
        + f"node(s) {', '.join(missing)} did not register within {NODE_WAIT_S:.0f} s (see their "
        "log lines above): their models are not served, and /readyz answers 503 until they are",
        err=True,
    )
    click.echo(f"hybridinfer is up on {url}, without {', '.join(missing)}", err=True)


TICK_S = 1.0
"""How often the server's main loop wakes on its own: uvicorn's 0.1 s tick was a third of
an idle gateway's wake-ups. Its work (the ``Date`` header, the request limit) is per second
anyway, and an exit wakes the loop at once."""


class GracefulServer(uvicorn.Server):
    """uvicorn, minus re-raising SIGINT/SIGTERM after its graceful shutdown, and ticking once
    a second instead of ten times.

    uvicorn re-raises a captured signal once it has stopped, which would end this process
    before it stops the children it started; here the shutdown returns normally instead.
    """

    _exiting: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _should_exit = False

    @property
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        """Set by a signal handler (run inside the loop's wait) or by code: either way the
        main loop is woken through the loop's self-pipe, not at its next tick."""
        self._should_exit = value
        if value and self._loop is not None and self._exiting is not None:
            self._loop.call_soon_threadsafe(self._exiting.set)

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._exiting = asyncio.Event()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 10) % 864000  # uvicorn does its per-second work at multiples of 10
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK_S):
                    await self._exiting.wait()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def _secret(value: SecretStr | None) -> str:
    return "" if value is None else value.get_secret_value()


def cloud_node_command(settings: Settings) -> list[str]:
    """The command line of the cloud node ``up`` runs beside the gateway."""
    return [
        sys.executable,
        "-m",
        "hybridinfer",
        "node",
        "--id",
        CLOUD_NODE_ID,
        "--tier",
        "cloud",
        "--zone",
        "public",
        "--host",
        "127.0.0.1",
        "--port",
        str(settings.resolved_cloud_port),
        "--models",
        ",".join(settings.cloud_models),
        "--models-dir",
        str(settings.resolved_models_dir),
        "--control-plane",
        f"http://127.0.0.1:{settings.port}",
        "--cost-per-call",
        str(settings.cloud_cost_per_call),
        "--heartbeat-interval",
        str(settings.heartbeat_interval_s),
    ]


LOG_FORMAT = click.option(
    "--log-format",
    type=click.Choice(["json", "text"]),
    default=None,
    help="Log lines as JSON objects carrying request_id (default) or as text.",
)


@click.command()
@click.option("--port", type=int, default=None, help="Gateway port (default 8080).")
@click.option(
    "--data-dir", type=click.Path(path_type=Path), default=None, help="Default ./.hybridinfer."
)
@click.option(
    "--config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None
)
@LOG_FORMAT
def up(
    port: int | None, data_dir: Path | None, config: Path | None, log_format: str | None
) -> None:
    """Run everything on this host: gateway, local tier and a cloud node on loopback."""
    with cli_errors():
        settings = load_settings(config, port=port, data_dir=data_dir, log_format=log_format)
    configure_logging(settings.log_level, settings.log_format)
    models_dir = settings.resolved_models_dir
    wanted = [*settings.local_models, *settings.cloud_models, EMBEDDING_MODEL]
    if any(not versions(models_dir, name) for name in wanted):
        build_models_with_progress(models_dir)
    if settings.node_token is None:
        settings = settings.model_copy(update={"node_token": SecretStr(secrets.token_urlsafe(32))})
    run_async(serve_with_llms(settings, cloud_node_command(settings)))


async def serve_with_llms(settings: Settings, cloud_node: list[str]) -> None:
    """``serve_gateway``, with the chat LLM servers beside it when the `llm` extra is there.

    They start first (each loads in ~1 s) so that the gateway's first chat has somewhere to go;
    they join ``static_nodes`` and the gateway's prober watches their health.
    """
    wanted = settings.llm == "on" or (settings.llm == "auto" and llm_extra_installed())
    if not wanted:
        await serve_gateway(settings, cloud_node)
        return
    specs = default_specs(
        settings.data_dir, settings.llm_local_max_input, settings.cloud_cost_per_call
    )
    servers = await start_servers(
        specs, settings.resolved_cloud_port + 1, settings.llm_threads, settings.llm_context_tokens
    )
    click.echo(
        "LLMs: " + ", ".join(f"{s.spec.model} ({s.spec.tier.value}) {s.url}" for s in servers),
        err=True,
    )
    static = [*settings.static_nodes, *(s.spec.registration(s.url) for s in servers)]
    own = [server.spec.node_id for server in servers]
    try:
        await serve_gateway(settings.model_copy(update={"static_nodes": static}), cloud_node, own)
    finally:
        await asyncio.gather(*(server.stop() for server in servers))


@click.command()
@click.option(
    "--config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None
)
@click.option("--port", type=int, default=None, help="Gateway port.")
@LOG_FORMAT
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=None,
    help="Gateway processes on the port (default the `workers` setting, 1); more than 1 "
    "needs cache: redis and a shared store.",
)
@click.option("--worker-index", type=int, default=None, hidden=True)
def gateway(
    config: Path | None,
    port: int | None,
    log_format: str | None,
    workers: int | None,
    worker_index: int | None,
) -> None:
    """Run the control plane (gateway, router, local tier); nodes register with it."""
    with cli_errors():
        settings = load_settings(
            config, port=port, log_format=log_format, workers=workers, worker_index=worker_index
        )
        require_shared_state(settings)
    configure_logging(settings.log_level, settings.log_format)
    if settings.workers > 1 and settings.worker_index is None:
        run_async(run_workers(settings, config))
        return
    run_async(serve_gateway(settings))


async def run_workers(settings: Settings, config: Path | None) -> None:
    """The parent of ``--workers N``: it serves nothing, it keeps N gateways running."""
    commands = [worker_command(settings, config, index) for index in range(settings.workers)]
    first_ready = socket_path(exposition_directory(settings.data_dir), 0)
    click.echo(f"hybridinfer: {settings.workers} workers on port {settings.port}", err=True)
    await WorkerPool(commands, first_ready).run()
