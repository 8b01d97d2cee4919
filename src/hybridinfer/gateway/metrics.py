"""``GET /metrics``: the Prometheus text exposition (``hybridinfer.observe.metrics`` lists them).

Admin-key only, like every other operator endpoint: Prometheus sends the key as a bearer
token (``authorization: {credentials_file: ...}`` in its scrape config; see
``deploy/prometheus/prometheus.yml``). No setting opens it to anonymous callers.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import metrics_of
from hybridinfer.observe.metrics import CONTENT_TYPE


@requires("admin")
async def metrics(request: Request) -> Response:
    return Response(await metrics_of(request).exposition(), media_type=CONTENT_TYPE)


METRICS_ROUTES = [Route("/metrics", metrics, methods=["GET"])]
