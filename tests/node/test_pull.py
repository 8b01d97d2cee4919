"""Acceptance: a version published to the object store reaches a running node process through
signed URLs, is verified, and is switched in under load without a failed request; a corrupted
upload is refused and reported. Runs on every object store (filesystem, S3 via moto)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from hybridinfer.models.store import ModelStore
from hybridinfer.objectstore.base import ObjectStore
from hybridinfer.objectstore.filesystem import FilesystemStore
from hybridinfer.objectstore.server import create_object_app
from tests.conftest import NODE_TOKEN
from tests.peers import node_process, serve_asgi

pytestmark = pytest.mark.integration
MODEL = "sentiment-small"
TEXT = {"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["a fine day"]}


def control_plane(models: ModelStore, beats: list[dict[str, Any]]) -> Starlette:
    """The control plane's node-facing side: registration, heartbeats, artifact offers
    (the same ``ModelStore.offer`` the gateway's ``/v1/artifacts`` serves)."""

    async def register(request: Request) -> Response:
        return JSONResponse({"id": "n"}, status_code=201)

    async def heartbeat(request: Request) -> Response:
        beats.append(orjson.loads(await request.body()))
        return JSONResponse({"status": "ready"})

    async def artifacts(request: Request) -> Response:
        assert request.headers["authorization"] == f"Bearer {NODE_TOKEN}"
        offers = await models.offer(request.path_params["name"], 60)
        return Response(orjson.dumps([o.model_dump(mode="json") for o in offers]))

    routes: list[Any] = [
        Route("/v1/nodes", register, methods=["POST"]),
        Route("/v1/nodes/{id}/heartbeat", heartbeat, methods=["POST"]),
        Route("/v1/artifacts/{name}", artifacts, methods=["GET"]),
    ]
    if isinstance(models.objects, FilesystemStore):
        routes.append(Mount("/v1/objects", app=create_object_app(models.objects)))
    return Starlette(routes=routes)


@pytest.fixture
def artifact(models_dir: Path) -> Iterator[tuple[bytes, dict[str, Any]]]:
    folder = models_dir / MODEL / sorted(p.name for p in (models_dir / MODEL).iterdir())[-1]
    return (folder / "model.onnx").read_bytes(), orjson.loads((folder / "card.json").read_bytes())


async def load(url: str, stop: asyncio.Event, seen: list[str], failures: list[str]) -> None:
    async with aiohttp.ClientSession() as session:
        while not stop.is_set():
            async with session.post(f"{url}/v2/models/{MODEL}/infer", json={"inputs": [TEXT]}) as r:
                body = await r.json()
                if r.status != 200:
                    failures.append(f"{r.status}: {body}")
                else:
                    seen.append(body["model_version"])


async def wait_until(predicate: Any, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def test_new_version_is_pulled_verified_and_switched_under_load(
    object_store: ObjectStore, artifact: tuple[bytes, dict[str, Any]], tmp_path: Path
) -> None:
    model, card = artifact
    models = ModelStore(object_store)
    await models.publish(MODEL, "1", model, card)
    beats: list[dict[str, Any]] = []
    with serve_asgi(control_plane(models, beats)) as plane:
        if isinstance(object_store, FilesystemStore):
            object_store.base_url = plane + "/v1/objects"
        args = [
            "--models", MODEL, "--models-dir", str(tmp_path / "none"),
            "--pull-models", "--pull-interval", "0.3", "--control-plane", plane,
            "--heartbeat-interval", "0.3", "--cache-dir", str(tmp_path / "cache"),
        ]  # fmt: skip
        env = {"HYBRIDINFER_NODE_TOKEN": NODE_TOKEN}
        with node_process(*args, env=env) as node:
            async with aiohttp.ClientSession() as session:

                async def ready() -> bool:
                    async with session.get(f"{node}/v2/models/{MODEL}/ready") as r:
                        return r.status == 200

                deadline = time.monotonic() + 30
                while not await ready():
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.1)
            stop, seen, failures = asyncio.Event(), [], []
            workers = [asyncio.create_task(load(node, stop, seen, failures)) for _ in range(4)]
            await wait_until(lambda: len(seen) > 50)
            await models.publish(MODEL, "2", model, card)
            await wait_until(lambda: seen[-1] == "2")
            # A corrupted upload: the stored artifact no longer matches its manifest.
            await models.publish(MODEL, "3", model, card)
            await object_store.put(f"models/{MODEL}/3/model.onnx", model[:-10] + b"corrupted!")
            async with aiohttp.ClientSession() as session:

                async def refused() -> bool:
                    async with session.post(f"{node}/v2/repository/index") as r:
                        return any(row.get("state") == "UNAVAILABLE" for row in await r.json())

                deadline = time.monotonic() + 30
                while not await refused():
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.1)
                async with session.get(f"{node}/v2/models/{MODEL}/versions/3") as r:
                    assert r.status == 404
                    assert "sha256" in (await r.json())["error"]
            count = len(seen)
            await wait_until(lambda: len(seen) > count + 50)
            stop.set()
            await asyncio.gather(*workers)
    assert failures == []
    assert seen[0] == "1"
    assert seen[-1] == "2"
    assert "3" not in seen
    assert seen.index("2") > 0
    assert "1" not in seen[seen.index("2") + 200 :]
    assert beats
    assert {"load", "memory", "memory_bytes", "in_flight", "queue_depth"} <= set(beats[-1])
