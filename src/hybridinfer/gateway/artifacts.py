"""Model artifacts for nodes: the versions of a model with short-lived signed URLs, and (for
the filesystem object store) the signed-URL object route itself.

``GET /v1/artifacts/{name}`` (node token) → ``[{"manifest", "model_url", "card_url", "card"}]``,
oldest version first. Nodes poll it (``node.puller``); they never hold store credentials.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from hybridinfer.gateway.routes import requires
from hybridinfer.gateway.state import artifacts_of
from hybridinfer.objectstore.base import ObjectStore
from hybridinfer.objectstore.filesystem import FilesystemStore
from hybridinfer.objectstore.server import create_object_app
from hybridinfer.server.responses import JSON

OBJECTS_PREFIX = "/v1/objects"


@requires("node")
async def list_artifacts(request: Request) -> Response:
    return JSON(await artifacts_of(request).offers(request.path_params["name"]))


def artifact_routes(objects: ObjectStore) -> list[BaseRoute]:
    """The artifact listing, plus the object route when the store is the filesystem."""
    routes: list[BaseRoute] = [Route("/v1/artifacts/{name}", list_artifacts, methods=["GET"])]
    if isinstance(objects, FilesystemStore):
        routes.append(Mount(OBJECTS_PREFIX, app=create_object_app(objects)))
    return routes
