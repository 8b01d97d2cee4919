"""The dashboard: ``GET /ui`` (a static page shipped in the package, no CDN) and the
``GET /v1/stats`` summary it polls.

The summary is ``control.stats.StatsService``'s (traffic counts from every finished trace).

The page and its static files are public: they hold no data. The page asks for an API key
once, keeps it in the tab's ``sessionStorage`` and sends it as a bearer token to the JSON APIs
(``/v1/stats``, ``/v1/traces``, ``/v1/nodes``, ``/v1/rollouts``, and the replay POST), which
need the admin scope as always.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import stats_of
from hybridinfer.server.responses import JSON

STATIC = Path(__file__).resolve().parent / "static"

# Everything the page loads comes from this gateway: a CDN reference would be refused too.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    "Cache-Control": "no-cache",
}


async def page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)


@requires("admin")
async def stats(request: Request) -> Response:
    return JSON(stats_of(request).summary())


DASHBOARD_ROUTES: list[BaseRoute] = [
    Route("/ui", page, methods=["GET"]),
    Mount("/ui/static", app=StaticFiles(directory=STATIC), name="ui-static"),
    Route("/v1/stats", stats, methods=["GET"]),
]
