"""The three deployment forms of examples/, each started as real processes on loopback (the
gateway and its nodes, configured by the example files), checked by where a request ran."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN_KEY, NODE_TOKEN, REPO, auth
from tests.peers import free_port
from tests.services import NATS_URL, REDIS_URL, require_service, unique

pytestmark = pytest.mark.integration

EXAMPLES = REPO / "examples"
SENTIMENT = {"task": "sentiment", "inputs": {"text": "I love this"}}
BUSY_LOCAL = 0.7
"""Under the default policy's 0.8 with a margin: the EWMA moves between the check and the
request."""


class Form:
    """One example deployment, running."""

    def __init__(self, tmp_path: Path, models_dir: Path, env: dict[str, str]) -> None:
        self.tmp_path = tmp_path
        self.models_dir = models_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "HYBRIDINFER_HOST": "127.0.0.1",
            "HYBRIDINFER_DATA_DIR": str(tmp_path / "data"),
            "HYBRIDINFER_MODELS_DIR": str(models_dir),
            "HYBRIDINFER_BOOTSTRAP_KEY": ADMIN_KEY,
            "HYBRIDINFER_NODE_TOKEN": NODE_TOKEN,
            **env,
        }
        self.processes: list[subprocess.Popen[bytes]] = []

    def _spawn(self, name: str, command: list[str]) -> None:
        with (self.tmp_path / f"{name}.log").open("wb") as log:
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "hybridinfer", *command],
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )

    def gateway(self, config: Path) -> None:
        self._spawn("gateway", ["gateway", "--config", str(config), "--port", str(self.port)])
        self.wait(lambda: httpx.get(self.url + "/readyz").status_code == 200, "gateway ready")

    def node(self, config: Path) -> None:
        port = free_port()
        command = ["node", "--config", str(config), "--port", str(port)]
        command += ["--models-dir", str(self.models_dir), "--control-plane", self.url]
        self._spawn(config.stem, command)

    def nodes(self) -> list[dict[str, object]]:
        nodes: list[dict[str, object]] = httpx.get(self.url + "/v1/nodes", headers=auth()).json()[
            "nodes"
        ]
        return nodes

    def ready_nodes(self) -> set[str]:
        return {str(node["id"]) for node in self.nodes() if node["status"] == "ready"}

    def local_load(self) -> float:
        """The host's smoothed CPU use as the gateway publishes it on its local nodes (the
        policy's ``node.local.load`` is the highest)."""
        loads = [node["load"] for node in self.nodes() if node["tier"] == "local"]
        assert loads, "the example runs no local node"
        return max(float(load) for load in loads)  # type: ignore[arg-type]

    def wait(self, check: object, what: str, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(process.poll() is not None for process in self.processes):
                pytest.fail(f"a process of the example exited early ({what}):\n{self.logs()}")
            try:
                if check():  # type: ignore[operator]
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        pytest.fail(f"{what} not within {timeout_s} s:\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}"
            for log in self.tmp_path.glob("*.log")
        )

    def infer(self, body: dict[str, object]) -> httpx.Response:
        return httpx.post(self.url + "/v1/infer", json=body, headers=auth(), timeout=10)

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def start_form(tmp_path: Path, models_dir: Path) -> Iterator[object]:
    forms: list[Form] = []

    def start(env: dict[str, str] | None = None) -> Form:
        form = Form(tmp_path, models_dir, env or {})
        forms.append(form)
        return form

    yield start
    for form in forms:
        form.stop()


def placed(response: httpx.Response) -> tuple[str, str]:
    assert response.status_code == 200, response.text
    subtask = response.json()["subtasks"][0]
    return subtask["tier"], subtask["node"]


def test_all_cloud(start_form: object, postgres_url: str) -> None:
    require_service(REDIS_URL, "Redis")
    require_service(NATS_URL, "NATS")
    form: Form = start_form(  # type: ignore[operator]
        {
            "HYBRIDINFER_STORE_URL": postgres_url,
            "HYBRIDINFER_REDIS_URL": REDIS_URL,
            "HYBRIDINFER_NATS_URL": NATS_URL,
            "HYBRIDINFER_QUEUE_STREAM": unique("HI_EXAMPLE_"),
            "HYBRIDINFER_CACHE_PREFIX": unique("hi-example:") + ":",
        }
    )
    form.gateway(EXAMPLES / "all-cloud" / "gateway.yaml")
    form.node(EXAMPLES / "all-cloud" / "node-cloud.yaml")
    form.wait(lambda: "cloud-a" in form.ready_nodes(), "cloud node registered")
    assert placed(form.infer(SENTIMENT)) == ("cloud", "cloud-a")


def test_cloud_plus_edge(start_form: object) -> None:
    form: Form = start_form()  # type: ignore[operator]
    form.gateway(EXAMPLES / "cloud-edge" / "gateway.yaml")
    form.node(EXAMPLES / "cloud-edge" / "node-edge.yaml")
    form.node(EXAMPLES / "cloud-edge" / "node-cloud.yaml")
    form.wait(lambda: {"edge-1", "cloud-1"} <= form.ready_nodes(), "edge and cloud registered")
    assert placed(form.infer(SENTIMENT)) == ("edge", "edge-1")  # light work stays at the edge
    sensitive = {**SENTIMENT, "options": {"privacy": "sensitive"}}
    assert placed(form.infer(sensitive)) == ("edge", "edge-1")  # private zone only
    heavy = {**SENTIMENT, "options": {"route": "cloud"}}
    assert placed(form.infer(heavy)) == ("cloud", "cloud-1")


def test_private_hybrid(start_form: object) -> None:
    form: Form = start_form()  # type: ignore[operator]
    form.gateway(EXAMPLES / "private-hybrid" / "gateway.yaml")
    form.node(EXAMPLES / "private-hybrid" / "node-cloud.yaml")
    form.wait(lambda: "cloud-1" in form.ready_nodes(), "cloud node registered")
    # The default policy sends local work to the cloud while the host is busy (its rule
    # `busy-local-sends-to-cloud`, node.local.load > 0.8): the node loading its models just
    # now keeps a core busy, so wait for the host to settle before asking where work stays.
    form.wait(lambda: form.local_load() <= BUSY_LOCAL, "the host settled after start-up")
    assert placed(form.infer(SENTIMENT)) == ("local", "local")
    assert placed(form.infer({**SENTIMENT, "options": {"route": "cloud"}})) == ("cloud", "cloud-1")
    refused = form.infer({**SENTIMENT, "options": {"privacy": "sensitive", "route": "cloud"}})
    assert refused.status_code == 403
