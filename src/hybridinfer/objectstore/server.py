"""Serves a filesystem store's signed URLs over HTTP (the gateway mounts it at ``/v1/objects``).

Only a URL whose signature verifies and has not expired gets the object; anything else is 403,
so the route needs no API key.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from hybridinfer.errors import InvalidInput
from hybridinfer.objectstore.filesystem import FilesystemStore


def create_object_app(store: FilesystemStore) -> Starlette:
    """An ASGI app serving ``GET /{key}?expires=&signature=`` from ``store``."""

    async def get_object(request: Request) -> Response:
        key = request.path_params["key"]
        expires = request.query_params.get("expires", "")
        signature = request.query_params.get("signature", "")
        try:
            path = store.path(key)
        except InvalidInput:
            return JSONResponse({"error": "invalid key"}, status_code=400)
        if not store.verify(key, expires, signature):
            return JSONResponse({"error": "signature invalid or expired"}, status_code=403)
        if not path.is_file():
            return JSONResponse({"error": "no such object"}, status_code=404)
        return FileResponse(path, media_type="application/octet-stream")

    return Starlette(routes=[Route("/{key:path}", get_object, methods=["GET"])])
