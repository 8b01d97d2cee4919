"""A node's ``GET /metrics``: what only the node can see, in Prometheus text format.

``hybridinfer_model_cache_disk_used_ratio{node}`` — the share (0..1) of the filesystem holding
the node's model cache that is in use; ``deploy/prometheus/alerts.yml`` alerts above 0.85.
Load, in-flight calls and health reach the gateway by heartbeat and are exported there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def disk_used_ratio(path: Path) -> float:
    """Used share of the filesystem ``path`` is on (its nearest existing parent if absent)."""
    existing = path.resolve()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    usage = shutil.disk_usage(existing)
    return usage.used / usage.total if usage.total else 0.0


def exposition(node_id: str, cache_dir: Path) -> str:
    name = "hybridinfer_model_cache_disk_used_ratio"
    label = node_id.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f"# HELP {name} Used share of the filesystem holding the model cache.\n"
        f"# TYPE {name} gauge\n"
        f'{name}{{node="{label}"}} {disk_used_ratio(cache_dir)!r}\n'
    )


async def metrics(request: Request) -> Response:
    state = request.app.state
    return Response(exposition(state.node_id, state.cache_dir), media_type=CONTENT_TYPE)
