"""Real hybridinfer processes on an emulated network: the gateway on the host, nodes inside
namespaces, each node registering with the URL of its own veth address.

Processes run under ``setpriv --pdeathsig`` (they die with the process that started them, even
on SIGKILL; the signal follows the starting *thread*, so start them from the main thread); logs
go to files in the work directory so a failing scenario can show them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import yaml

from bench.chaos.network import Namespace, Network
from hybridinfer.server.supervisor import with_parent_death_signal

KEY = "chaos-admin-key-0123456789"
NODE_TOKEN = "chaos-node-token-0123456789"
NODE_PORT = 8000
"""Every node listens on this port of its own namespace's address."""
GRPC_PORT = 8001
"""A node started with ``grpc=True`` also serves gRPC on this port of its address."""


@dataclass
class Process:
    """One started process, its log and the URL it serves."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    url: str
    grpc_url: str | None = None
    """The gRPC endpoint it registers (the gateway then calls it over gRPC), if any."""

    def alive(self) -> bool:
        return self.popen.poll() is None

    def rss_bytes(self) -> int:
        return int(psutil.Process(self.popen.pid).memory_info().rss)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no goodbye to the gateway."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait()

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} ({self.log}) ---\n" + "\n".join(text.splitlines()[-lines:])


def free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    """A gateway and its nodes; ``close`` (or the context manager) stops them all."""

    network: Network
    models_dir: Path
    workdir: Path
    processes: dict[str, Process] = field(default_factory=dict)
    gateway: Process | None = None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self, name: str, command: list[str], env: dict[str, str], url: str) -> Process:
        log = self.workdir / f"{name}.log"
        with log.open("ab") as sink:
            popen = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
        process = self.processes[name] = Process(name, popen, log, url)
        return process

    def start_gateway(self, **settings: Any) -> Process:
        """``hybridinfer gateway`` on the host address; ``settings`` override the defaults."""
        address = self.network.gateway_address
        port = free_port(address)
        config = {
            "host": address,
            "port": port,
            "data_dir": str(self.workdir / "gateway"),
            "models_dir": str(self.models_dir),
            "local_models": ["sentiment-small"],
            "heartbeat_interval_s": 1.0,
            "rate_limit_per_minute": 10_000_000,
            "log_level": "warning",
            # The scenarios measure links, breakers and load, not the privacy gate: reading
            # names before each cloud call (~11 ms of NER on one thread) would queue under
            # their load and its 1 s timeout would show as the link's latency.
            "privacy_ner": False,
            # The load repeats the same few bodies: reused answers would never reach the
            # paths under test.
            "answer_cache": "off",
            **settings,
        }
        path = self.workdir / "gateway.yaml"
        path.write_text(yaml.safe_dump(config))
        env = {
            **os.environ,
            "HYBRIDINFER_BOOTSTRAP_KEY": KEY,
            "HYBRIDINFER_NODE_TOKEN": NODE_TOKEN,
        }
        command = [sys.executable, "-m", "hybridinfer", "gateway", "--config", str(path)]
        url = f"http://{address}:{port}"
        self.gateway = self._spawn("gateway", with_parent_death_signal(command), env, url)
        self.wait(lambda: httpx.get(url + "/readyz", timeout=2).status_code == 200, 60, "ready")
        return self.gateway

    def start_node(
        self,
        namespace: Namespace,
        node_id: str,
        tier: str,
        zone: str,
        models: list[str],
        cost_per_call: float = 0.0,
        grpc: bool = False,
    ) -> Process:
        """``hybridinfer node`` inside ``namespace``, registering with the gateway; with
        ``grpc`` it also serves gRPC on ``GRPC_PORT`` and registers ``grpc://`` on its veth
        address, so the gateway's inference calls and probes to it go over gRPC (heartbeats
        stay REST). The shapers redirect every frame of the veth, so that port's traffic is
        slowed and cut like the REST port's."""
        assert self.gateway is not None, "start the gateway first"
        address = namespace.link.address
        command = [
            *(sys.executable, "-m", "hybridinfer", "node", "--id", node_id),
            *("--tier", tier, "--zone", zone, "--host", address, "--port", str(NODE_PORT)),
            *("--models", ",".join(models), "--models-dir", str(self.models_dir)),
            *("--control-plane", self.gateway.url, "--cost-per-call", str(cost_per_call)),
            *("--heartbeat-interval", "1", "--cache-dir", str(self.workdir / node_id)),
        ]
        grpc_url = f"grpc://{address}:{GRPC_PORT}" if grpc else None
        if grpc:
            command += ["--grpc-port", str(GRPC_PORT)]
        env = {**os.environ, "HYBRIDINFER_NODE_TOKEN": NODE_TOKEN}
        url = f"http://{address}:{NODE_PORT}"
        process = self._spawn(node_id, namespace.command(command), env, url)
        process.grpc_url = grpc_url
        return process

    def peers(self, namespace: Namespace, port: int) -> list[str]:
        """The remote addresses of the TCP connections established to ``port`` inside
        ``namespace`` (``ss``): who is talking to the node's REST or gRPC port."""
        ss = ["ss", "-Htn", "state", "established", "sport", "=", f":{port}"]
        command = ["ip", "netns", "exec", namespace.name, *ss]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        return [line.split()[-1].rsplit(":", 1)[0] for line in done.stdout.splitlines()]

    def set_faults(self, node_id: str, **faults: float) -> None:
        """Put ``faults`` (``node/faults.py``: delay_ms, delay_percent, abort_percent …) on a
        node's ``/v2`` paths; no arguments clears them. The admin call is not delayed."""
        url = f"{self.processes[node_id].url}/admin/faults"
        headers = {"Authorization": f"Bearer {NODE_TOKEN}"}
        if faults:
            response = httpx.put(url, json=faults, headers=headers, timeout=5.0)
        else:
            response = httpx.delete(url, headers=headers, timeout=5.0)
        response.raise_for_status()

    def client(self, timeout_s: float = 15.0) -> httpx.Client:
        assert self.gateway is not None
        headers = {"Authorization": f"Bearer {KEY}"}
        return httpx.Client(base_url=self.gateway.url, headers=headers, timeout=timeout_s)

    def nodes(self) -> dict[str, dict[str, Any]]:
        """``GET /v1/nodes`` by node id."""
        with self.client(5.0) as client:
            response = client.get("/v1/nodes")
        response.raise_for_status()
        return {node["id"]: node for node in response.json()["nodes"]}

    def breakers(self, node_id: str) -> set[str]:
        """The breaker states of a node's deployments, as ``/v1/nodes`` shows them."""
        node = self.nodes().get(node_id, {})
        return {str(d.get("breaker", "closed")) for d in node.get("deployments", [])}

    def wait_ready(self, *node_ids: str, timeout_s: float = 60.0) -> None:
        def ready() -> bool:
            nodes = self.nodes()
            return all(nodes.get(n, {}).get("status") == "ready" for n in node_ids)

        self.wait(ready, timeout_s, f"nodes {', '.join(node_ids)} ready")

    def wait(self, check: Any, timeout_s: float, what: str) -> float:
        """Poll ``check()`` until true; the seconds it took. Fails with the logs if it is not."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            dead = [p for p in self.processes.values() if not p.alive() and p.name == "gateway"]
            if dead:
                raise RuntimeError(f"the gateway exited early\n{self.logs()}")
            try:
                if check():
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{what}: not within {timeout_s} s\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(process.tail() for process in self.processes.values())

    def close(self) -> None:
        for process in reversed(list(self.processes.values())):
            process.stop()
