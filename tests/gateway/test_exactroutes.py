"""Exact paths first: the same route, scope and answer as Starlette's router, without its scan."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from hybridinfer.gateway.exactroutes import ExactRoutes


def named(name: str) -> Any:
    async def endpoint(request: Request) -> Response:
        scope = request.scope
        return JSONResponse(
            {
                "endpoint": name,
                "params": request.path_params,
                "route": scope["route"].path,
                "has_router": "router" in scope,
            }
        )

    endpoint.__name__ = name
    return endpoint


ROUTES = [
    Route("/items/{item}", named("item"), methods=["GET"]),
    Route("/items/special", named("special"), methods=["GET", "POST"]),  # GET: shadowed
    Route("/chat", named("chat"), methods=["POST"]),
    Route("/chat", named("chat-get"), methods=["GET"]),
    Route("/status", named("status")),
]


def client(exact: bool) -> TestClient:
    """The router alone or behind the table, either way inside the one middleware that turns
    the router's HTTPException (404, 405) into its answer (the gateway's front door does)."""
    app = Starlette(routes=ROUTES)
    inner = ExactRoutes(app.router) if exact else app.router
    app.middleware_stack = ExceptionMiddleware(inner)
    return TestClient(app, follow_redirects=False)


def test_the_table_holds_only_what_the_router_would_pick_first() -> None:
    table = ExactRoutes(Starlette(routes=ROUTES).router).table
    assert ("/items/special", "GET") not in table  # /items/{item} comes first and takes it
    assert table[("/items/special", "POST")].endpoint.__name__ == "special"
    assert table[("/chat", "POST")].endpoint.__name__ == "chat"
    assert table[("/chat", "GET")].endpoint.__name__ == "chat-get"
    assert {("/status", "GET"), ("/status", "HEAD")} <= set(table)
    assert not any("{" in path for path, _ in table)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/chat"),
        ("GET", "/chat"),
        ("GET", "/items/special"),
        ("POST", "/items/special"),
        ("GET", "/items/7"),
        ("DELETE", "/chat"),  # 405 from the router
        ("GET", "/status"),
        ("GET", "/status/"),  # the router's slash redirect
        ("GET", "/nowhere"),
    ],
)
def test_every_request_gets_the_routers_answer(method: str, path: str) -> None:
    through_router = client(exact=False).request(method, path)
    through_table = client(exact=True).request(method, path)
    assert through_table.status_code == through_router.status_code
    assert through_table.headers.get("location") == through_router.headers.get("location")
    assert through_table.headers.get("allow") == through_router.headers.get("allow")
    assert through_table.content == through_router.content


def test_a_hit_sets_the_scope_the_endpoint_reads() -> None:
    answer = client(exact=True).post("/chat").json()
    assert answer == {"endpoint": "chat", "params": {}, "route": "/chat", "has_router": True}


def test_under_a_root_path_the_router_matches_as_before() -> None:
    app = Starlette(routes=ROUTES)
    app.middleware_stack = ExceptionMiddleware(ExactRoutes(app.router))
    proxied = TestClient(app, root_path="/api")
    assert proxied.post("/api/chat").json()["endpoint"] == "chat"
    assert proxied.get("/api/items/special").json()["endpoint"] == "item"
