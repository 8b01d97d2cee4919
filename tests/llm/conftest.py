"""Real LLM servers (llama_cpp.server with the packaged GGUF files) and a real gateway on
loopback, for the OpenAI-compatible API's integration tests.

Needs the `llm` extra. Without it the tests skip on a laptop, but FAIL under CI (env ``CI``),
because CI must prove the real thing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from pydantic import SecretStr

from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.server.llmserver import LlmServer, LlmSpec, default_specs, free_port
from hybridinfer.settings import Settings
from tests.conftest import ADMIN_KEY, NODE_TOKEN


def require_llm_extra() -> None:
    """Skip without the `llm` extra; under CI, fail instead."""
    from hybridinfer.server.llmserver import llm_extra_installed

    if llm_extra_installed() and importlib.util.find_spec("openai") is not None:
        return
    message = "the `llm` extra (llama-cpp-python[server], GGUF packages) or `openai` is missing"
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the LLM tests: {message}")
    pytest.skip(message)


@dataclass
class RunningLlm:
    """One llama_cpp.server child process."""

    server: LlmServer
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def start_llm(spec: LlmSpec, start_port: int = 18200) -> RunningLlm:
    server = LlmServer(spec, free_port(start_port), threads=1, context_tokens=2048)
    process = subprocess.Popen(
        server.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{spec.model} server exited: {server.command()}")
        try:
            if httpx.get(f"{server.url}/v1/models", timeout=1).status_code == 200:
                return RunningLlm(server, process)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{spec.model} server did not start")


@pytest.fixture(scope="session")
def llm_specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LlmSpec]:
    require_llm_extra()
    specs = default_specs(tmp_path_factory.mktemp("llm"), 1500, 0.0002)
    return {spec.node_id: spec for spec in specs}


@pytest.fixture(scope="session")
def llms(llm_specs: dict[str, LlmSpec]) -> Iterator[dict[str, RunningLlm]]:
    """The three servers of the default configuration, shared by the session."""
    running: dict[str, RunningLlm] = {}
    try:
        for node_id, spec in llm_specs.items():
            running[node_id] = start_llm(spec)
        yield running
    finally:
        for item in running.values():
            item.stop()


@dataclass
class Gateway:
    url: str
    plane: ControlPlane

    def get(self, path: str, **params: str) -> Any:
        """A JSON GET with the admin key."""
        headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=60) as client:
            return client.get(path, params=params).json()


def serve(settings: Settings) -> Iterator[Gateway]:
    """The real gateway app under uvicorn, in a thread with its own event loop."""
    plane = ControlPlane(settings)
    config = uvicorn.Config(
        create_app(plane), host="127.0.0.1", port=settings.port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the gateway did not start"
    try:
        yield Gateway(f"http://127.0.0.1:{settings.port}", plane)
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def gateway_settings(tmp_path: Path, nodes: dict[str, RunningLlm]) -> Settings:
    return Settings(
        data_dir=tmp_path,
        port=free_port(18300),
        local_models=[],
        bootstrap_key=SecretStr(ADMIN_KEY),
        node_token=SecretStr(NODE_TOKEN),
        probe_interval_s=0.5,
        answer_cache="off",  # repeated chats must reach the servers (the privacy proof turns it on)
        static_nodes=[item.server.spec.registration(item.server.url) for item in nodes.values()],
    )


@pytest.fixture
def gateway(tmp_path: Path, llms: dict[str, RunningLlm]) -> Iterator[Gateway]:
    """A gateway whose chat and embedding nodes are the shared real LLM servers."""
    yield from serve(gateway_settings(tmp_path, llms))


def wait_until_measured(gateway: Gateway, node_id: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """The node's chat deployment once the prober has measured its latency prior."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        nodes = {node["id"]: node for node in gateway.get("/v1/nodes")["nodes"]}
        chat = next(d for d in nodes[node_id]["deployments"] if d["capability"] == "chat")
        if chat["latency_source"] == "measured":
            return dict(chat)
        time.sleep(0.2)
    raise AssertionError(f"the prober did not measure {node_id} within {timeout_s:g} s")
