"""The node registry: heartbeats age remote nodes into ``down``, in-process ones never; the
index answers by capability with or without a task."""

from __future__ import annotations

import pytest

from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration, TensorInfo
from hybridinfer.core.topology import (
    QUALITY_MEASURED_LABEL,
    NodeStatus,
    PriorMeasurement,
    PriorSource,
    Tier,
    Zone,
)
from hybridinfer.errors import NotFound
from hybridinfer.signals.registry import NodeRegistry, node_from_registration, prior_sources
from tests.fakes import deployment, node


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def registry_with_clock() -> tuple[NodeRegistry, Clock]:
    clock = Clock()
    return NodeRegistry(heartbeat_interval_s=10.0, missed_heartbeats=3, clock=clock), clock


def test_a_remote_node_is_down_after_its_missed_beats_and_back_on_a_heartbeat() -> None:
    registry, clock = registry_with_clock()
    registry.add(node("edge-1", Tier.EDGE, Zone.PRIVATE))
    clock.now += 30.0
    assert registry.get("edge-1").status is NodeStatus.READY
    assert registry.any_ready()
    clock.now += 0.1
    (edge,) = registry.nodes()
    assert edge.status is NodeStatus.DOWN
    assert not registry.any_ready()

    beat = registry.heartbeat("edge-1", 0.4, 3, queue_depth=2, models_not_ready={"m": "pull"})

    assert beat.status is NodeStatus.READY
    assert (beat.load, beat.in_flight, beat.queue_depth) == (0.4, 3, 2)
    assert beat.models_not_ready == {"m": "pull"}
    assert beat.last_heartbeat == clock.now


def test_an_in_process_node_never_misses_a_heartbeat() -> None:
    registry, clock = registry_with_clock()
    registry.add(node("local", Tier.LOCAL, Zone.PRIVATE))  # protocol onnx: in-process
    clock.now += 10_000.0
    assert registry.get("local").last_heartbeat == 0.0
    assert registry.nodes()[0].status is NodeStatus.READY


def test_a_probe_revives_a_node_and_keeps_its_reported_load() -> None:
    registry, clock = registry_with_clock()
    registry.add(node("edge-1", Tier.EDGE, Zone.PRIVATE))
    registry.heartbeat("edge-1", 0.7, 1)
    clock.now += 60.0
    registry.refresh()
    registry.mark_alive("edge-1")
    revived = registry.get("edge-1")
    assert (revived.status, revived.load, revived.last_heartbeat) == (
        NodeStatus.READY,
        0.7,
        clock.now,
    )


def test_candidates_are_indexed_by_capability_and_task_and_follow_removals() -> None:
    registry, _ = registry_with_clock()
    classifier = deployment("edge-1", "small", quality=0.7, latency_ms=2)
    chat = deployment("cloud-1", "llm", quality=0.9, latency_ms=50, task="chat")
    registry.add(node("edge-1", Tier.EDGE, Zone.PRIVATE, classifier))
    registry.add(node("cloud-1", Tier.CLOUD, Zone.PUBLIC, chat))

    sentiment = registry.candidates("text-classification", "sentiment")
    assert [d.id for _, d in sentiment] == [classifier.id]
    assert {d.id for _, d in registry.candidates("text-classification", None)} == {
        classifier.id,
        chat.id,
    }
    assert registry.candidates("text-classification", "unknown") == []

    registry.remove("edge-1")
    assert registry.candidates("text-classification", "sentiment") == []
    with pytest.raises(NotFound) as missing:
        registry.get("edge-1")
    assert missing.value.error_code == "unknown_node"


def test_re_registration_replaces_the_node_and_makes_it_ready() -> None:
    registry, clock = registry_with_clock()
    registry.add(node("edge-1", Tier.EDGE, Zone.PRIVATE))
    clock.now += 100.0
    registry.refresh()
    restarted = node(
        "edge-1", Tier.EDGE, Zone.PRIVATE, deployment("edge-1", "m", quality=1, latency_ms=1)
    )
    registry.add(restarted)
    assert registry.get("edge-1") is restarted
    assert restarted.status is NodeStatus.READY
    assert restarted.last_heartbeat == clock.now


def test_a_registration_becomes_a_node_with_its_deployments() -> None:
    registration = NodeRegistration(
        id="edge-7",
        tier=Tier.EDGE,
        zone=Zone.PRIVATE,
        url="http://edge-7:8001/",
        deployments=[
            DeploymentInfo(
                model="sentiment-small",
                version="3",
                capability="text-classification",
                task="sentiment",
                quality=0.8,
                latency_ms=1.5,
                labels=["negative", "positive"],
                inputs=[TensorInfo(name="text", datatype="BYTES", shape=[-1, 1])],
                cost_per_call=0.01,
                calibration={"cascade": {}},
            )
        ],
    )

    built = node_from_registration(registration)

    assert (built.id, built.url, built.protocol) == ("edge-7", "http://edge-7:8001", "v2")
    (served,) = built.deployments
    assert served.id == "edge-7/sentiment-small:3"
    assert (served.task, served.cost_per_call, served.labels) == (
        "sentiment",
        0.01,
        ["negative", "positive"],
    )
    assert [(t.name, t.datatype, t.shape) for t in served.inputs] == [("text", "BYTES", [-1, 1])]
    assert served.calibration == {"cascade": {}}


def info(**fields: object) -> DeploymentInfo:
    return DeploymentInfo.model_validate(
        {"model": "m", "version": "1", "capability": "chat", "quality": 0.3, "latency_ms": 100}
        | fields
    )


def test_each_prior_says_where_it_comes_from() -> None:
    # A model card's figures were measured when the model was built (its held-out split).
    assert prior_sources(info(calibration={"accuracy": 0.9})) == (PriorSource.CARD,) * 2
    # Typed in: assumed, unless the registration says its quality was measured.
    assert prior_sources(info()) == (PriorSource.ASSUMED, PriorSource.ASSUMED)
    labelled = info(labels=[QUALITY_MEASURED_LABEL])
    assert prior_sources(labelled) == (PriorSource.ASSUMED, PriorSource.MEASURED)


def test_a_measurement_replaces_the_typed_latency_and_shows_in_the_description() -> None:
    registration = NodeRegistration(
        id="llm", tier=Tier.CLOUD, zone=Zone.PUBLIC, url="http://llm", deployments=[info()]
    )
    (served,) = node_from_registration(registration).deployments
    assert served.describe() | {"id": ""} == {
        "id": "",
        "model": "m",
        "version": "1",
        "capability": "chat",
        "task": None,
        "quality": 0.3,
        "quality_source": "assumed",
        "latency_ms": 100.0,
        "latency_source": "assumed",
        "cost_per_call": 0.0,
        "max_input": 100_000,
    }
    served.record_measurement(PriorMeasurement(250.0, 40.0, 30.0, 8, 1_800_000_000.0), rtt_ms=2.0)
    described = served.describe()
    assert (described["latency_ms"], described["latency_source"]) == (248.0, "measured")
    assert described["quality_source"] == "assumed"
    assert described["measurement"] == {
        "answer_ms": 250.0,
        "ttft_ms": 40.0,
        "tokens_per_s": 30.0,
        "tokens": 8,
        "measured_at": 1_800_000_000.0,
    }
