"""Real peers the integration tests start: an S3-compatible server, ASGI apps on real ports,
a `hybridinfer node` process. With env ``CI`` set, a missing peer fails the test."""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from hybridinfer.objectstore.base import ObjectStore
from hybridinfer.objectstore.filesystem import FilesystemStore
from hybridinfer.objectstore.server import create_object_app


def require(module: str) -> Any:
    """Import a peer's package; skip without it, except under CI where it must be installed."""
    if os.environ.get("CI"):
        return importlib.import_module(module)  # __import__ would return the top package
    return pytest.importorskip(module)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(url: str, seconds: float = 30.0, context: ssl.SSLContext | None = None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1, context=context):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


@contextmanager
def serve_asgi(app: Any) -> Iterator[str]:
    """Run an ASGI app with uvicorn on a free port in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@asynccontextmanager
async def served_here(config: uvicorn.Config) -> AsyncIterator[None]:
    """Serve ``config`` on this event loop until the block ends (5 s at most to start)."""
    instance = uvicorn.Server(config)
    task = asyncio.ensure_future(instance.serve())
    for _ in range(500):
        if instance.started:
            break
        await asyncio.sleep(0.01)
    assert instance.started
    try:
        yield
    finally:
        instance.should_exit = True
        with suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)


@contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3-compatible server (``moto[server]``) on a free port; yields its endpoint."""
    moto_server = require("moto.server")
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@contextmanager
def node_process(
    *args: str,
    env: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
    port: int | None = None,
) -> Iterator[str]:
    """`hybridinfer node` with ``args`` on ``port`` (default: a free one); yields its base URL
    once ready (``https`` when ``context``, which must trust the node's certificate, is
    given)."""
    port = port or free_port()
    command = [sys.executable, "-m", "hybridinfer", "node", "--port", str(port), *args]
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"hybridinfer-node-{port}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, env={**os.environ, **(env or {})}, stdout=output, stderr=output
        )
        url = f"{'https' if context else 'http'}://127.0.0.1:{port}"
        try:
            wait_for(url + "/v2/health/ready", context=context)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=20)


@contextmanager
def version_2_node(
    models_dir: Path, tmp_path: Path, env: dict[str, str] | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """A node process serving sentiment-small as version "2" (the same weights, a new card):
    its URL and card. ``env`` adds to its environment (a node token opens its fault drills)."""
    import orjson

    source = models_dir / "sentiment-small" / "1"
    target = tmp_path / "v2-models" / "sentiment-small" / "2"
    shutil.copytree(source, target)
    card = orjson.loads((target / "card.json").read_bytes())
    card["version"] = "2"
    (target / "card.json").write_bytes(orjson.dumps(card))
    args = ["--id", "edge-v2", "--tier", "edge", "--zone", "private", "--models", "sentiment-small"]
    with node_process(*args, "--models-dir", str(tmp_path / "v2-models"), env=env) as url:
        yield url, card


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    with s3_server() as endpoint:
        yield endpoint


@pytest.fixture(params=["filesystem", "s3"])
async def object_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[ObjectStore]:
    """A fresh, empty store of each kind; signed URLs are served over real HTTP."""
    if request.param == "filesystem":
        store = FilesystemStore(tmp_path / "objects", b"test-signing-key", "http://placeholder")
        with serve_asgi(create_object_app(store)) as url:
            store.base_url = url
            yield store
        return
    boto3 = require("boto3")
    endpoint = request.getfixturevalue("s3_endpoint")
    from hybridinfer.objectstore.s3 import S3Store

    bucket = f"test-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=bucket)
    yield S3Store(bucket, prefix="hybridinfer", client=client)


@contextmanager
def gateway_process(
    data_dir: Path,
    models_dir: Path,
    admin_key: str,
    *flags: str,
    node_token: str | None = None,
    **config: Any,
) -> Iterator[tuple[str, Path]]:
    """`hybridinfer gateway` (SQLite, in-memory cache and queue) on a free port with
    ``config`` as its YAML file and ``flags`` on its command line; yields its base URL and the
    file its stdout and stderr go to, once it is ready."""
    import yaml

    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    config_file = data_dir / "gateway.yaml"
    settings = {"data_dir": str(data_dir), "models_dir": str(models_dir), **config}
    # Tests repeat identical requests and count what reaches models: no answer reuse unless
    # a test turns it on.
    defaults = {"inference_threads": 1, "answer_cache": "off"}
    config_file.write_text(yaml.safe_dump({**defaults, **settings}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRIDINFER_")}
    env["HYBRIDINFER_BOOTSTRAP_KEY"] = admin_key
    if node_token is not None:
        env["HYBRIDINFER_NODE_TOKEN"] = node_token
    command = [sys.executable, "-m", "hybridinfer", "gateway", "--config", str(config_file)]
    log = data_dir / "gateway.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*command, "--port", str(port), *flags], env=env, stdout=output, stderr=output
        )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for(url + "/readyz", 90)
        except RuntimeError:
            pytest.fail(f"the gateway did not become ready:\n{log.read_text()}")
        yield url, log
    finally:
        process.terminate()
        process.wait(timeout=20)
