"""The real gateway (ControlPlane + app) under the same uvicorn set-up as ``hybridinfer gateway``
(``serving.gateway_server_config``: slow-client guard, backlog, TLS) and the same event loop
(``listener.py``: uvloop, connections accepted in batches), in a thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.server.listener import new_event_loop
from hybridinfer.server.serving import gateway_server_config
from hybridinfer.settings import Settings


@contextmanager
def running_gateway(settings: Settings) -> Iterator[ControlPlane]:
    """Serve on ``settings.host:port`` until the block ends; yields the control plane."""
    plane = ControlPlane(settings)
    config = gateway_server_config(create_app(plane), settings)
    server = uvicorn.Server(config)

    def serve() -> None:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            runner.run(server.serve())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the gateway did not start"
    try:
        yield plane
    finally:
        server.should_exit = True
        thread.join(timeout=15)
