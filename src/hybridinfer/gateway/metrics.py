"""``GET /metrics``: the Prometheus text exposition (``hybridinfer.observe.metrics`` lists them).

Admin-key only, like every other operator endpoint: Prometheus sends the key as a bearer
token (``authorization: {credentials_file: ...}`` in its scrape config; see
``deploy/prometheus/prometheus.yml``). No setting opens it to anonymous callers.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.errors import QueueUnavailable
from hybridinfer.gateway.routes import plane_of, requires
from hybridinfer.observe.metrics import CONTENT_TYPE, Metrics


@requires("admin")
async def metrics(request: Request) -> Response:
    try:
        depth = await plane_of(request).queue.depth()
    except QueueUnavailable:
        depth = -1
    registry: Metrics = request.app.state.metrics
    return Response(registry.exposition(depth), media_type=CONTENT_TYPE)


METRICS_ROUTES = [Route("/metrics", metrics, methods=["GET"])]
