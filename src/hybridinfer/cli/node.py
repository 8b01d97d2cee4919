"""``hybridinfer node``: serve models over the Open Inference Protocol and register."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import click
import psutil
import uvicorn

from hybridinfer.cli.output import cli_errors, configure_logging, run_async
from hybridinfer.core.heap import freeze_startup_heap
from hybridinfer.core.schemas import Heartbeat, NodeRegistration
from hybridinfer.errors import ConfigError
from hybridinfer.models.catalog import deployment_info
from hybridinfer.models.catalog import versions as catalog_versions
from hybridinfer.node.agent import NodeAgent
from hybridinfer.node.app import create_node_app
from hybridinfer.node.grpcserver import grpc_serving
from hybridinfer.node.history import RequestHistory
from hybridinfer.node.loader import ModelLoader
from hybridinfer.node.puller import ModelPuller
from hybridinfer.node.repository import ModelRepository
from hybridinfer.server.serving import server_config
from hybridinfer.server.tls import client_context
from hybridinfer.settings import NodeSettings
from hybridinfer.yamlfile import load_with_lines


def load_node_settings(config: Path | None, flags: dict[str, Any]) -> NodeSettings:
    values: dict[str, Any] = {}
    if config is not None:
        data, _ = load_with_lines(config.read_text(encoding="utf-8"), str(config))
        if not isinstance(data, dict):
            raise ConfigError(f"{config}:1: the node config must be a mapping")
        if "token" in data:
            raise ConfigError(
                f"{config}: the token comes from HYBRIDINFER_NODE_TOKEN, not the file"
            )
        values.update(data)
    values.update({key: value for key, value in flags.items() if value is not None})
    try:
        return NodeSettings(**values)
    except ValueError as exc:
        raise ConfigError(f"invalid node settings: {exc}") from None


def built_here(settings: NodeSettings) -> list[str]:
    """The models to load from ``models_dir``: all of them, or (when pulling) those built
    here; the others arrive with the first pull."""
    names = settings.models
    if settings.pull_models:
        names = [name for name in names if catalog_versions(settings.models_dir, name)]
    return names


def build_repository(settings: NodeSettings) -> ModelRepository:
    """An empty repository; ``ModelLoader`` fills it (and retries what fails to load)."""
    return ModelRepository(
        None,
        [],
        settings.threads,
        max_batch_size=settings.max_batch_size,
        max_wait_s=settings.max_batch_wait_us / 1_000_000,
        cache_bytes=settings.session_cache_bytes,
        keep_versions=settings.keep_versions,
        inline_below_us=settings.inline_below_us,
    )


def measure_load(repository: ModelRepository) -> Heartbeat:
    """What a heartbeat reports: CPU and memory use, in flight, queued."""
    return Heartbeat(
        load=min(psutil.cpu_percent(interval=None) / 100.0, 1.0),
        in_flight=repository.in_flight,
        queue_depth=repository.queue_depth,
        memory=min(psutil.virtual_memory().percent / 100.0, 1.0),
        memory_bytes=psutil.Process().memory_info().rss,
        models_not_ready=dict(repository.unavailable),
    )


def _registration(settings: NodeSettings, repository: ModelRepository) -> NodeRegistration:
    return NodeRegistration(
        id=settings.id,
        tier=settings.tier,
        zone=settings.zone,
        url=settings.url,
        grpc_url=settings.grpc_url,
        deployments=[deployment_info(card, settings.cost_per_call) for card in repository.cards()],
    )


def control_plane_tls(settings: NodeSettings) -> ssl.SSLContext | None:
    """Trust the control plane by ``tls_ca_file``; present the node's certificate (mTLS)."""
    if settings.tls_ca_file is None and settings.tls_cert_file is None:
        return None
    return client_context(settings.tls_ca_file, settings.tls_cert_file, settings.tls_key_file)


def _background(
    settings: NodeSettings,
    repository: ModelRepository,
    history: RequestHistory,
    loader: ModelLoader,
) -> Callable[[], AbstractAsyncContextManager[None]]:
    token = settings.token.get_secret_value() if settings.token else None
    if settings.control_plane and token is None:
        raise ConfigError("registering needs a node token: set HYBRIDINFER_NODE_TOKEN")

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(history.save)
            await stack.enter_async_context(loader.running())
            if settings.control_plane and token is not None and settings.pull_models:
                puller = ModelPuller(
                    settings.control_plane,
                    token,
                    settings.models,
                    repository,
                    settings.cache_dir / "artifacts",
                    settings.pull_interval_s,
                    tls=control_plane_tls(settings),
                )
                await stack.enter_async_context(puller.running())
            if settings.control_plane and token is not None:
                agent = NodeAgent(
                    settings.control_plane,
                    token,
                    lambda: _registration(settings, repository),
                    settings.heartbeat_interval_s,
                    lambda: measure_load(repository),
                    history.save,
                    tls=control_plane_tls(settings),
                )
                await stack.enter_async_context(agent.running())
            yield

    return running


async def serve_node(settings: NodeSettings) -> None:
    repository = build_repository(settings)
    loader = ModelLoader(repository, settings.models_dir, built_here(settings))
    await loader.load_all()
    history = RequestHistory(settings.cache_dir / "history.json")
    repository.history = history
    repository.preload(history.most_requested(settings.preload))
    token = settings.token.get_secret_value() if settings.token else None
    background = _background(settings, repository, history, loader)
    app = create_node_app(repository, background, token, settings.id, settings.cache_dir)
    server = uvicorn.Server(
        server_config(
            app,
            settings.host,
            settings.port,
            tls_cert_file=settings.tls_cert_file,
            tls_key_file=settings.tls_key_file,
            tls_ca_file=settings.tls_ca_file if settings.tls_require_client_cert else None,
            require_client_cert=settings.tls_require_client_cert,
        )
    )
    freeze_startup_heap()  # the models are loaded: what is alive now lives as long as the node
    if settings.grpc_port is None:
        await server.serve()
        return
    async with grpc_serving(repository, settings):
        await server.serve()


@click.command()
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--id", "node_id", default=None, help="Unique node id.")
@click.option("--tier", type=click.Choice(["local", "edge", "cloud"]), default=None)
@click.option("--zone", type=click.Choice(["private", "public"]), default=None)
@click.option("--host", default=None)
@click.option("--port", type=int, default=None)
@click.option("--grpc-port", type=int, default=None, help="Also serve V2 over gRPC here.")
@click.option("--models", default=None, help="Comma-separated model names.")
@click.option("--models-dir", type=click.Path(path_type=Path), default=None)
@click.option("--control-plane", default=None, help="Gateway URL to register with.")
@click.option("--advertise-url", default=None, help="URL the gateway should call.")
@click.option("--cost-per-call", type=float, default=None)
@click.option("--heartbeat-interval", type=float, default=None)
@click.option("--max-batch-size", type=int, default=None, help="Micro-batch rows (1: off).")
@click.option("--max-batch-wait-us", type=int, default=None, help="Micro-batch wait (µs).")
@click.option("--pull-models/--no-pull-models", default=None, help="Pull versions from the store.")
@click.option("--pull-interval", type=float, default=None, help="Seconds between pulls.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None)
def node(
    config: Path | None,
    node_id: str | None,
    tier: str | None,
    zone: str | None,
    host: str | None,
    port: int | None,
    grpc_port: int | None,
    models: str | None,
    models_dir: Path | None,
    control_plane: str | None,
    advertise_url: str | None,
    cost_per_call: float | None,
    heartbeat_interval: float | None,
    max_batch_size: int | None,
    max_batch_wait_us: int | None,
    pull_models: bool | None,
    pull_interval: float | None,
    cache_dir: Path | None,
) -> None:
    """Serve models over the Open Inference Protocol (V2) and register with a gateway."""
    flags = {
        "id": node_id,
        "tier": tier,
        "zone": zone,
        "host": host,
        "port": port,
        "grpc_port": grpc_port,
        "models": models.split(",") if models else None,
        "models_dir": models_dir,
        "control_plane": control_plane,
        "advertise_url": advertise_url,
        "cost_per_call": cost_per_call,
        "heartbeat_interval_s": heartbeat_interval,
        "max_batch_size": max_batch_size,
        "max_batch_wait_us": max_batch_wait_us,
        "pull_models": pull_models,
        "pull_interval_s": pull_interval,
        "cache_dir": cache_dir,
    }
    with cli_errors():
        settings = load_node_settings(config, flags)
    configure_logging("info")
    run_async(serve_node(settings))
