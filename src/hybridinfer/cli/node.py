"""``hybridinfer node``: serve models over the Open Inference Protocol and register."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import uvicorn

from hybridinfer.catalog import deployment_info
from hybridinfer.cli.output import cli_errors, configure_logging, run_async
from hybridinfer.errors import ConfigError
from hybridinfer.node.agent import NodeAgent
from hybridinfer.node.app import create_node_app
from hybridinfer.node.repository import ModelRepository
from hybridinfer.schemas import NodeRegistration
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


async def serve_node(settings: NodeSettings) -> None:
    repository = ModelRepository(settings.models_dir, settings.models, settings.threads)
    agent = None
    if settings.control_plane:
        if settings.token is None:
            raise ConfigError("registering needs a node token: set HYBRIDINFER_NODE_TOKEN")
        registration = NodeRegistration(
            id=settings.id,
            tier=settings.tier,
            zone=settings.zone,
            url=settings.url,
            deployments=[
                deployment_info(card, settings.cost_per_call) for card in repository.cards()
            ],
        )
        agent = NodeAgent(
            settings.control_plane,
            settings.token.get_secret_value(),
            registration,
            settings.heartbeat_interval_s,
            lambda: repository.in_flight,
        )
    app = create_node_app(repository, agent.running if agent is not None else None)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host=settings.host, port=settings.port, log_level="warning", access_log=False
        )
    )
    await server.serve()


@click.command()
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--id", "node_id", default=None, help="Unique node id.")
@click.option("--tier", type=click.Choice(["local", "edge", "cloud"]), default=None)
@click.option("--zone", type=click.Choice(["private", "public"]), default=None)
@click.option("--host", default=None)
@click.option("--port", type=int, default=None)
@click.option("--models", default=None, help="Comma-separated model names.")
@click.option("--models-dir", type=click.Path(path_type=Path), default=None)
@click.option("--control-plane", default=None, help="Gateway URL to register with.")
@click.option("--advertise-url", default=None, help="URL the gateway should call.")
@click.option("--cost-per-call", type=float, default=None)
@click.option("--heartbeat-interval", type=float, default=None)
def node(
    config: Path | None,
    node_id: str | None,
    tier: str | None,
    zone: str | None,
    host: str | None,
    port: int | None,
    models: str | None,
    models_dir: Path | None,
    control_plane: str | None,
    advertise_url: str | None,
    cost_per_call: float | None,
    heartbeat_interval: float | None,
) -> None:
    """Serve models over the Open Inference Protocol (V2) and register with a gateway."""
    flags = {
        "id": node_id,
        "tier": tier,
        "zone": zone,
        "host": host,
        "port": port,
        "models": models.split(",") if models else None,
        "models_dir": models_dir,
        "control_plane": control_plane,
        "advertise_url": advertise_url,
        "cost_per_call": cost_per_call,
        "heartbeat_interval_s": heartbeat_interval,
    }
    with cli_errors():
        settings = load_node_settings(config, flags)
    configure_logging("info")
    run_async(serve_node(settings))
