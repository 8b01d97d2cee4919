"""The chaos suite: real gateway and node processes, nodes in network namespaces whose veth
links are slowed, made lossy or cut. It needs root (namespaces, veth, tc) and the `ip`, `tc`
and `setpriv` tools; without them it skips, except under CI, where it fails."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.chaos.cluster import Cluster
from bench.chaos.network import Namespace, Network

from tests.chaos.workload import digits, sentiment

EDGE_MODELS = ["sentiment-small", "digits-small"]
CLOUD_MODELS = ["sentiment-large", "digits-large"]
CLOUD_COST = 0.0002
GATEWAY_SETTINGS: dict[str, Any] = {}
"""Overrides of the gateway's defaults for every scenario: none. The default per-try bound
(adaptive: 4x a deployment's p99, at least 250 ms) is what lets a call into a cut link fall
back in time instead of waiting out the request's deadline."""


def missing_privileges() -> list[str]:
    missing = [] if os.geteuid() == 0 else ["root"]
    return missing + [tool for tool in ("ip", "tc", "setpriv") if shutil.which(tool) is None]


@pytest.fixture(scope="session")
def network() -> Iterator[Network]:
    """Two namespaces, ``edge`` (private zone) and ``cloud`` (public), on veth links."""
    missing = missing_privileges()
    if missing:
        reason = f"the chaos suite needs {', '.join(missing)} (namespaces, veth, tc)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with Network() as net:
        net.add_namespace("edge")
        net.add_namespace("cloud")
        yield net


@pytest.fixture
def edge(network: Network) -> Namespace:
    return network.namespaces["edge"]


@pytest.fixture
def cloud(network: Network) -> Namespace:
    return network.namespaces["cloud"]


def start_cluster(cluster: Cluster, network: Network, cloud_protocol: str = "rest") -> None:
    """The gateway (local tier: sentiment-small in process), edge-1 and cloud-1; the
    gateway calls cloud-1 over ``cloud_protocol`` (``rest`` or ``grpc``)."""
    cluster.start_gateway(**GATEWAY_SETTINGS)
    edge, cloud = network.namespaces["edge"], network.namespaces["cloud"]
    grpc = cloud_protocol == "grpc"
    cluster.start_node(edge, "edge-1", "edge", "private", EDGE_MODELS)
    cluster.start_node(cloud, "cloud-1", "cloud", "public", CLOUD_MODELS, CLOUD_COST, grpc=grpc)
    cluster.wait_ready("edge-1", "cloud-1")
    warm_up(cluster)


def warm_up(cluster: Cluster) -> None:
    """Load every model on every tier once, so no scenario times a model's first load."""
    bodies = [sentiment("warm up", route=tier) for tier in ("local", "edge", "cloud")]
    bodies += [digits(0, route=tier) for tier in ("edge", "cloud")]
    with cluster.client() as client:
        for body in bodies:
            answered = [client.post("/v1/infer", json=body).status_code]
            # A model's first load can outlast a try and open its breaker: wait out the
            # cool-down so the half-open trial finds the model loaded.
            while answered[-1] != 200 and len(answered) < 30:
                time.sleep(0.5)
                answered.append(client.post("/v1/infer", json=body).status_code)
            assert answered[-1] == 200, f"{body} never answered: {answered}\n{cluster.logs()}"


@pytest.fixture
def cloud_protocol() -> str:
    """How the gateway calls the cloud node: REST, unless a scenario parametrises this
    (``@pytest.mark.parametrize("cloud_protocol", ["rest", "grpc"])``)."""
    return "rest"


@pytest.fixture
def cluster(
    network: Network, models_dir: Path, tmp_path: Path, cloud_protocol: str
) -> Iterator[Cluster]:
    """A fresh gateway and nodes on clean links for each scenario; logs printed at the end
    (pytest shows them when the scenario fails)."""
    for namespace in network.namespaces.values():
        namespace.link.restore()
    with Cluster(network, models_dir, tmp_path) as running:
        try:
            start_cluster(running, network, cloud_protocol)
            yield running
        finally:
            for namespace in network.namespaces.values():
                namespace.link.restore()
            print(running.logs())
