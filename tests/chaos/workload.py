"""What the scenarios send, and how they watch the gateway while a fault is on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import httpx
from bench.chaos.cluster import KEY, Cluster
from bench.chaos.load import Load, Outcome

UNCERTAIN_TEXTS = [
    "well then",
    "mixed feelings about the new phone",
    "news at eleven",
    "the update came out",
    "so that happened",
    "I guess it was fine but also not great",
    "ok",
    "hmm",
]
"""Texts the local sentiment model is unsure of (confidence 0.40-0.49): the default policy's
cascade escalates them to the cloud model while the cloud is healthy."""


def sentiment(text: str, **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"task": "sentiment", "inputs": {"text": text}}
    if options:
        body["options"] = options
    return body


@cache
def digit_images() -> list[list[float]]:
    """Twenty real 8x8 digits (scikit-learn's bundled set)."""
    from sklearn.datasets import load_digits

    return [[float(value) for value in row] for row in load_digits().data[:20]]


def digits(index: int, **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"task": "digits", "inputs": {"pixels": digit_images()[index % 20]}}
    if options:
        body["options"] = options
    return body


def uncertain_sentiment() -> list[dict[str, Any]]:
    return [sentiment(text) for text in UNCERTAIN_TEXTS]


async def with_fault(
    load: Load, seconds: float, fault_at_s: float, fault: Callable[[], None]
) -> tuple[list[Outcome], float]:
    """Run ``load`` for ``seconds``; call ``fault`` ``fault_at_s`` in. Outcomes, fault time."""
    running = asyncio.create_task(load.run(seconds))
    await asyncio.sleep(fault_at_s)
    at = load.clock()
    await asyncio.to_thread(fault)
    return await running, at


@dataclass
class Sample:
    at_s: float
    status: str
    breakers: set[str]
    load: float
    trials: int = 0
    """Half-open trials of the node's breakers so far (a half-open spell may be shorter
    than the poll)."""
    recoveries: int = 0
    """Trials that closed a breaker."""
    opens: int = 0
    """Times the node's breakers opened so far (an open spell may be shorter than the poll)."""
    ejected: bool = False
    """Whether one of the node's deployments is ejected as an outlier."""


@dataclass
class NodeWatch:
    """Polls ``/v1/nodes`` every 50 ms: one node's status, breaker states and load."""

    cluster: Cluster
    node_id: str
    clock: Callable[[], float]
    samples: list[Sample] = field(default_factory=list)

    async def run(self, stop: asyncio.Event) -> None:
        assert self.cluster.gateway is not None
        headers = {"Authorization": f"Bearer {KEY}"}
        async with httpx.AsyncClient(
            base_url=self.cluster.gateway.url, headers=headers, timeout=2.0
        ) as client:
            while not stop.is_set():
                try:
                    nodes = (await client.get("/v1/nodes")).json()["nodes"]
                except (httpx.HTTPError, KeyError, ValueError):
                    nodes = []
                for node in nodes:
                    if node["id"] == self.node_id:
                        deployments = node["deployments"]
                        breakers = {d.get("breaker", "closed") for d in deployments}
                        sample = Sample(
                            self.clock(),
                            node["status"],
                            breakers,
                            node["load"],
                            sum(d.get("breaker_trials", 0) for d in deployments),
                            sum(d.get("breaker_recoveries", 0) for d in deployments),
                            sum(d.get("breaker_opens", 0) for d in deployments),
                            any(d.get("ejected", False) for d in deployments),
                        )
                        self.samples.append(sample)
                await asyncio.sleep(0.05)

    def saturated(self, at_s: float, on: float = 0.9, off: float = 0.8) -> bool:
        """Whether the gateway held the node's admission limited at ``at_s``: its load
        reached ``on`` (``local_cpu_saturated``) and had not yet fallen below ``off`` (0.1
        lower). The sample just after ``at_s`` counts too (the poll lags by up to 50 ms)."""
        state, states = False, []
        for sample in self.samples:
            state = sample.load >= on or (state and sample.load >= off)
            states.append((sample.at_s, state))
        before = [held for when, held in states if when <= at_s]
        after = [held for when, held in states if when > at_s][:1]
        return any(before[-1:] + after)

    def at(self, at_s: float) -> Sample | None:
        """The last sample taken at or before ``at_s``."""
        before = [sample for sample in self.samples if sample.at_s <= at_s]
        return before[-1] if before else None

    def first(self, since_s: float, check: Callable[[Sample], bool]) -> float | None:
        """Seconds from ``since_s`` to the first sample that passes ``check``."""
        for sample in self.samples:
            if sample.at_s >= since_s and check(sample):
                return sample.at_s - since_s
        return None


async def watched(
    watch: NodeWatch, load: Load, seconds: float, fault_at_s: float, fault: Callable[[], None]
) -> tuple[list[Outcome], float]:
    """``with_fault`` while ``watch`` polls the gateway."""
    stop = asyncio.Event()
    polling = asyncio.create_task(watch.run(stop))
    try:
        return await with_fault(load, seconds, fault_at_s, fault)
    finally:
        stop.set()
        await polling
