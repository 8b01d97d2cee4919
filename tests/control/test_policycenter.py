"""The policy center with two replicas on one SQLite store: the seed file seeds once, a change
made through one replica is adopted by the other's reload, canaries split by routing key, and
what does not validate here never serves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hybridinfer.control.audit import AuditLog
from hybridinfer.control.policycenter import PolicyCenter, cascade_thresholds
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.policy.canary import on_canary_side
from hybridinfer.policy.document import compile_policy
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.sql import SqlStore
from tests.fakes import deployment, node

SEED = "version: seed-1\n"
NEXT = "version: ops-2\nrules:\n  - {name: all-local, when: 'true', action: local}\n"
QUANTILES = [{"q": 0.0, "confidence": 0.4}, {"q": 1.0, "confidence": 0.8}]


@pytest.fixture
def seed_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(SEED)
    return path


@pytest.fixture
async def replicas(
    store: SqlStore, seed_file: Path
) -> AsyncIterator[tuple[PolicyCenter, PolicyCenter]]:
    """Two started replicas sharing the store (their polls kept out of the way)."""
    audit = AuditLog(store)
    first = PolicyCenter(store, NodeRegistry(), seed_file, poll_interval_s=3600, audit=audit)
    second = PolicyCenter(store, NodeRegistry(), seed_file, poll_interval_s=3600, audit=audit)
    await first.start()
    await second.start()
    yield first, second
    await first.stop()
    await second.stop()


async def test_the_seed_file_is_stored_and_audited_once_by_replicas_starting_together(
    store: SqlStore, replicas: tuple[PolicyCenter, PolicyCenter]
) -> None:
    first, second = replicas
    assert first.current().version == second.current().version == "seed-1"
    assert [p["version"] for p in await store.list_policies()] == ["seed-1"]
    (entry,) = await AuditLog(store).list(action="policy.apply")
    assert (entry["actor"], entry["target"]) == ("system", "seed-1")


async def test_a_version_applied_on_one_replica_is_adopted_by_the_others_reload(
    replicas: tuple[PolicyCenter, PolicyCenter],
) -> None:
    first, second = replicas

    await first.apply(NEXT, "key-a")
    assert first.current().version == "ops-2"
    assert second.current().version == "seed-1"
    await second.reload()

    assert second.current().version == "ops-2"
    assert [rule.rule.name for rule in second.current().rules] == ["all-local"]


async def test_a_reload_that_read_the_store_before_an_apply_does_not_put_the_old_one_back(
    replicas: tuple[PolicyCenter, PolicyCenter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The poll's reload reads the store, then awaits: an apply landing in between must win."""
    center, _ = replicas
    read, resume = asyncio.Event(), asyncio.Event()
    serving = center._states.serving

    async def slow_read() -> Any:
        states = await serving()  # what the store says before the apply below
        read.set()
        await resume.wait()
        return states

    monkeypatch.setattr(center._states, "serving", slow_read)
    polling = asyncio.create_task(center.reload())
    await read.wait()
    monkeypatch.setattr(center._states, "serving", serving)
    await center.apply(NEXT, "key-a")
    resume.set()
    await polling

    assert center.current().version == "ops-2"
    await center.reload()  # and the next poll, reading the store afresh, agrees
    assert center.current().version == "ops-2"


async def test_a_canary_serves_its_share_of_routing_keys_on_every_replica(
    replicas: tuple[PolicyCenter, PolicyCenter],
) -> None:
    first, second = replicas
    await first.apply(NEXT, "key-a", stage=True)
    assert first.current().version == "seed-1"  # staged: serves nothing yet

    await first.canary("ops-2", 20, "key-a")
    await second.reload()

    keys = [f"user-{index}" for index in range(200)]
    expected = {key: on_canary_side(key, "ops-2", 20) for key in keys}
    for center in (first, second):
        canary = center.canary_state()
        assert canary is not None
        assert (canary.policy.version, canary.percent) == ("ops-2", 20)
        chosen = {key: center.choose(key).version == "ops-2" for key in keys}
        assert chosen == expected
    assert 0 < sum(expected.values()) < len(keys)

    await first.promote("ops-2", "key-a")
    await second.reload()
    assert second.canary_state() is None
    assert {second.choose(key).version for key in keys} == {"ops-2"}


async def test_a_stored_version_this_release_cannot_compile_never_serves(
    store: SqlStore, replicas: tuple[PolicyCenter, PolicyCenter]
) -> None:
    first, _ = replicas
    # Written by a newer release, say: a field this one does not know.
    await store.add_policy("future-9", "version: future-9\nnew_field: 1\n", {}, "key-a")
    assert await store.active_policy_version() == "future-9"

    await first.reload()

    assert first.current().version == "seed-1"


async def test_a_changed_seed_file_is_applied_and_an_invalid_one_is_not(
    store: SqlStore, seed_file: Path
) -> None:
    center = PolicyCenter(store, NodeRegistry(), seed_file, poll_interval_s=0.02)
    await center.start()
    try:
        await asyncio.to_thread(seed_file.write_text, NEXT)
        for _ in range(300):  # up to 3 s
            if center.current().version == "ops-2":
                break
            await asyncio.sleep(0.01)
        assert center.current().version == "ops-2"

        broken = "version: broken-3\nrules: [{name: x, when: 'nope(', action: local}]\n"
        await asyncio.to_thread(seed_file.write_text, broken)
        await asyncio.sleep(0.2)
        assert center.current().version == "ops-2"
        assert "broken-3" not in {p["version"] for p in await store.list_policies()}
    finally:
        await center.stop()


def test_cascade_knobs_are_resolved_from_the_cheapest_local_model_that_can_tell() -> None:
    registry = NodeRegistry()
    calibrated = deployment("local", "small", quality=0.7, latency_ms=2.0)
    calibrated.calibration = {"confidence_quantiles": QUANTILES}
    uncalibrated = deployment("local", "tiny", quality=0.6, latency_ms=0.5)  # tried first
    edge = deployment("edge-1", "edge-model", quality=0.8, latency_ms=1.0)
    edge.calibration = {"confidence_quantiles": [{"q": 0.0, "confidence": 0.99}]}
    registry.add(node("local", Tier.LOCAL, Zone.PRIVATE, calibrated, uncalibrated))
    registry.add(node("edge-1", Tier.EDGE, Zone.PRIVATE, edge))
    policy = compile_policy(
        "version: c\ncascade:\n  sentiment: {target_cloud_share: 0.5}\n"
        "  digits: {target_cloud_share: 0.5}\n"
    ).policy

    assert cascade_thresholds(policy, registry) == {"sentiment": pytest.approx(0.6)}
