"""Every route of the gateway, found by walking its route table (mounts included, every
method), refuses a request without a key (401), with a revoked key (401) and with a key that
lacks the route's scope (403) — except the documented public routes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from hybridinfer.control.keys import key_id_of
from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.middleware import PUBLIC_PATHS, PUBLIC_PREFIXES
from tests.conftest import ADMIN_KEY, NODE_TOKEN, auth

DOCUMENTED_PUBLIC = {"/healthz", "/readyz", "/ui", "/openapi.json"}
DOCUMENTED_PUBLIC_PREFIXES = {"/v1/objects/", "/ui/static/"}


def walk(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    for route in routes:
        if isinstance(route, Mount):
            below = getattr(route.app, "routes", None)
            if below is None:
                for method in ("GET", "HEAD", "POST"):
                    yield method, prefix + route.path + "/anything", None
            else:
                yield from walk(below, prefix + route.path)
        else:
            assert isinstance(route, Route)
            concrete = re.sub(r"\{[^}]+\}", "x", prefix + route.path)
            for method in sorted(route.methods or ()):
                yield method, concrete, route.endpoint


def public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


@pytest.fixture
def keys(client: TestClient, plane: ControlPlane) -> dict[str, str]:
    def create(scopes: set[str]) -> str:
        return str(client.portal.call(plane.keys.create, "t", scopes))  # type: ignore[union-attr]

    revoked = create({"admin"})
    client.portal.call(plane.keys.revoke, key_id_of(revoked))  # type: ignore[union-attr]
    return {"infer": create({"infer"}), "revoked": revoked}


def test_the_public_routes_are_exactly_the_documented_ones() -> None:
    assert set(PUBLIC_PATHS) == DOCUMENTED_PUBLIC
    assert set(PUBLIC_PREFIXES) == DOCUMENTED_PUBLIC_PREFIXES


def test_every_route_refuses_missing_revoked_and_unscoped_keys(
    client: TestClient, keys: dict[str, str]
) -> None:
    # the key that lacks each scope: node credentials lack infer, infer keys lack admin,
    # admin keys lack node
    lacking = {"infer": NODE_TOKEN, "admin": keys["infer"], "node": ADMIN_KEY}
    checked = 0
    for method, path, endpoint in walk(list(client.app.routes)):  # type: ignore[attr-defined]
        if public(path):
            continue
        scope = getattr(endpoint, "required_scope", None)
        assert scope in lacking, f"{method} {path} declares no scope (use @requires)"
        missing = client.request(method, path)
        assert missing.status_code == 401, f"{method} {path} without a key: {missing.status_code}"
        revoked = client.request(method, path, headers=auth(keys["revoked"]))
        assert revoked.status_code == 401, f"{method} {path} revoked key: {revoked.status_code}"
        unscoped = client.request(method, path, headers=auth(lacking[scope]))
        assert unscoped.status_code == 403, (
            f"{method} {path} without {scope}: {unscoped.status_code}"
        )
        checked += 1
    assert checked >= 30  # the walk found the table (35+ route-methods today), not a stub


def test_public_routes_answer_without_a_key(client: TestClient) -> None:
    for path in ("/healthz", "/openapi.json", "/ui"):
        assert client.get(path).status_code == 200, path
