"""``NodeService``: each method is one whole node use case, on a real SQLite store."""

from __future__ import annotations

import orjson
import pytest

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.nodes import NodeService, ServedModel
from hybridinfer.core.schemas import DeploymentInfo, Heartbeat, NodeRegistration
from hybridinfer.core.topology import NodeStatus, Tier, Zone
from hybridinfer.errors import NoCapacity, NotFound, UpstreamUnavailable
from hybridinfer.signals.breaker import Breakers
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.sql import SqlStore


def registration(node_id: str, tier: Tier, *models: tuple[str, str]) -> NodeRegistration:
    return NodeRegistration(
        id=node_id,
        tier=tier,
        zone=Zone.PRIVATE if tier is not Tier.CLOUD else Zone.PUBLIC,
        url=f"http://{node_id}:8001",
        deployments=[
            DeploymentInfo(
                model=model, version="1", capability=capability, quality=0.8, latency_ms=20.0
            )
            for model, capability in models
        ],
    )


@pytest.fixture
def registry() -> NodeRegistry:
    return NodeRegistry(heartbeat_interval_s=5.0)


@pytest.fixture
def breakers() -> Breakers:
    return Breakers(failure_threshold=1)


@pytest.fixture
def nodes(store: SqlStore, registry: NodeRegistry, breakers: Breakers) -> NodeService:
    return NodeService(
        registry=registry,
        store=store,
        audit=AuditLog(store),
        breakers=breakers,
        heartbeat_interval_s=5.0,
        clock=lambda: 1234.5,
    )


async def test_register_adds_persists_audits_and_replies(
    nodes: NodeService, store: SqlStore, registry: NodeRegistry
) -> None:
    edge = registration("edge-1", Tier.EDGE, ("sentiment-small", "text-classification"))
    reply = await nodes.register(edge, actor="node-token")

    assert reply == {"id": "edge-1", "heartbeat_interval_s": 5.0, "registered_at": 1234.5}
    assert [node.id for node in registry.nodes()] == ["edge-1"]
    [stored] = await store.list_nodes()
    assert stored["id"] == "edge-1"
    assert orjson.loads(stored["registration"])["url"] == "http://edge-1:8001"
    [entry] = await AuditLog(store).list()
    assert (entry["actor"], entry["action"], entry["target"]) == (
        "node-token",
        "node.register",
        "edge-1",
    )
    assert entry["before"] is None
    assert entry["after"]["deployments"][0]["model"] == "sentiment-small"


async def test_registering_again_audits_what_it_replaced(
    nodes: NodeService, store: SqlStore
) -> None:
    await nodes.register(registration("edge-1", Tier.EDGE, ("a", "chat")), "node-token")
    await nodes.register(registration("edge-1", Tier.EDGE, ("b", "chat")), "node-token")

    newest = (await AuditLog(store).list())[0]
    assert newest["before"]["deployments"][0]["model"] == "a"
    assert newest["after"]["deployments"][0]["model"] == "b"
    assert len(await store.list_nodes()) == 1


async def test_heartbeat_records_the_load_and_answers_the_status(
    nodes: NodeService, registry: NodeRegistry
) -> None:
    await nodes.register(registration("edge-1", Tier.EDGE), "node-token")

    reply = nodes.heartbeat("edge-1", Heartbeat(load=0.7, in_flight=3, queue_depth=2))

    assert reply == {"id": "edge-1", "status": "ready"}
    node = registry.get("edge-1")
    assert (node.load, node.in_flight, node.queue_depth) == (0.7, 3, 2)
    with pytest.raises(NotFound):
        nodes.heartbeat("nobody", Heartbeat())


async def test_describe_all_merges_each_deployments_breaker(
    nodes: NodeService, breakers: Breakers
) -> None:
    await nodes.register(registration("edge-1", Tier.EDGE, ("a", "chat"), ("b", "chat")), "t")
    breakers.on_result("edge-1/a:1", UpstreamUnavailable("down"))

    [node] = nodes.describe_all()

    states = {d["model"]: d["breaker"] for d in node["deployments"]}
    assert states == {"a": "open", "b": "closed"}
    assert node["deployments"][1]["breaker_trials"] == 0


async def test_ready_needs_a_ready_node(nodes: NodeService) -> None:
    with pytest.raises(NoCapacity, match="no node is ready") as refused:
        await nodes.check_ready()
    assert refused.value.error_code == "not_ready"

    await nodes.register(registration("edge-1", Tier.EDGE), "t")
    await nodes.check_ready()


async def test_ready_waits_once_for_the_expected_nodes(
    nodes: NodeService, registry: NodeRegistry
) -> None:
    await nodes.register(registration("edge-1", Tier.EDGE), "t")
    nodes.expect(["cloud-1"])
    with pytest.raises(NoCapacity, match="waiting for node"):
        await nodes.check_ready()
    await nodes.register(registration("cloud-1", Tier.CLOUD), "t")
    await nodes.check_ready()
    registry.get("cloud-1").status = NodeStatus.DOWN
    await nodes.check_ready()  # a start-up gate: a later outage does not make it unready


async def test_ready_needs_the_store(
    nodes: NodeService, store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await nodes.register(registration("edge-1", Tier.EDGE), "t")

    async def unreachable() -> bool:
        return False

    monkeypatch.setattr(store, "ping", unreachable)
    with pytest.raises(NoCapacity, match="store is unreachable"):
        await nodes.check_ready()


async def test_served_models_lists_each_model_once_with_every_tier(nodes: NodeService) -> None:
    await nodes.register(
        registration("edge-1", Tier.EDGE, ("llm", "chat"), ("cls", "text-classification")), "t"
    )
    await nodes.register(
        registration("cloud-1", Tier.CLOUD, ("llm", "chat"), ("vec", "embedding")), "t"
    )

    served = nodes.served_models(("chat", "embedding"))

    assert served == [
        ServedModel("llm", "chat", ["edge", "cloud"]),
        ServedModel("vec", "embedding", ["cloud"]),
    ]
