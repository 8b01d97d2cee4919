"""Exact paths first: a request whose path and method one route takes literally goes straight to
that route's app; every other request goes through Starlette's router as before.

Starlette's router tries its routes in order, a regular expression each, until one matches:
with the gateway's hundred routes the chat and infer endpoints paid ~30 µs of matching per
request. The table here holds only what the router itself would pick: a route without path
parameters, for each of its methods, where no route before it in the list matches the same path
and method (so the first match still wins). A hit sets the scope as the router does (``router``,
``route``, ``endpoint``, ``path_params``) and calls the same app; anything else (a parameter in
the path, a trailing slash to redirect, a method the route does not take: its 405) is left to
the router, and so is every request under a ``root_path`` (a proxy's prefix).
"""

from __future__ import annotations

from starlette.routing import Match, Route, Router
from starlette.types import Receive, Scope, Send


class ExactRoutes:
    """``router`` with a dictionary in front for its literal (path, method) pairs."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.table: dict[tuple[str, str], Route] = {}
        routes = router.routes
        for index, route in enumerate(routes):
            if not isinstance(route, Route) or route.param_convertors or not route.methods:
                continue
            for method in route.methods:
                probe: Scope = {
                    "type": "http",
                    "path": route.path,
                    "root_path": "",
                    "method": method,
                }
                if (route.path, method) in self.table or route.matches(probe)[0] is not Match.FULL:
                    continue
                if any(earlier.matches(probe)[0] is Match.FULL for earlier in routes[:index]):
                    continue
                self.table[(route.path, method)] = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):  # else the router's matching
            route = self.table.get((scope["path"], scope["method"]))
            if route is not None:
                if "router" not in scope:
                    scope["router"] = self.router
                scope["route"] = route
                scope["endpoint"] = route.endpoint
                scope["path_params"] = dict(scope.get("path_params", {}))
                await route.app(scope, receive, send)
                return
        await self.router(scope, receive, send)
