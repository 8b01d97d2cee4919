from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from hybridinfer.core.plan import Plan, Privacy, Subtask
from hybridinfer.core.topology import Node, Tier, Zone
from hybridinfer.core.trace import Trace
from hybridinfer.execute.admission import PriorityLimiter
from hybridinfer.execute.cpuload import CpuTimes, LocalCpu, read_cpu_times
from hybridinfer.execute.executor import Admission, Executor
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from tests.fakes import SequenceBackend, hybrid_registry


class Counters:
    """CPU counters that advance by a chosen busy fraction per reading."""

    def __init__(self) -> None:
        self.busy = 0.0
        self.total = 0.0
        self.next_busy_fraction = 0.0

    def read(self) -> CpuTimes:
        self.busy += self.next_busy_fraction
        self.total += 1.0
        return CpuTimes(self.busy, self.total)


def local_node() -> Node:
    return Node(id="local", tier=Tier.LOCAL, zone=Zone.PRIVATE, url="inproc://", protocol="onnx")


def test_a_sample_is_the_busy_share_since_the_previous_one() -> None:
    counters = Counters()
    cpu = LocalCpu([local_node()], PriorityLimiter(8), read=counters.read)
    counters.next_busy_fraction = 0.75
    assert cpu.sample() == 0.75
    counters.next_busy_fraction = 0.25
    assert cpu.sample() == 0.25


def test_saturation_shrinks_local_admission_and_publishes_the_load() -> None:
    node = local_node()
    limiter = PriorityLimiter(8)
    cpu = LocalCpu([node], limiter, alpha=0.5, saturated=0.9, saturated_in_flight=2)
    for _ in range(3):
        cpu.update(1.0)
    assert not cpu.saturated  # 0.875 after three samples: smoothed, not yet
    cpu.update(1.0)
    assert cpu.saturated
    assert node.load == cpu.cpu > 0.9
    assert limiter.limit == 2
    assert limiter.constrained
    cpu.update(0.8)  # 0.87: inside the hysteresis band, still limited
    assert limiter.limit == 2
    cpu.update(0.5)
    cpu.update(0.5)  # ~0.59: released
    assert not cpu.saturated
    assert limiter.limit == 8
    assert not limiter.constrained
    assert node.load < 0.8


async def test_a_constrained_local_node_spills_over_yet_serves_local_only_work() -> None:
    backend = SequenceBackend({"local": [(0.2, 0.9)], "edge-1": [(0.0, 0.8)]})
    signals = Signals()
    policy = compile_policy("version: t")
    router = Router(hybrid_registry(), signals, lambda: policy)
    executor = Executor({"onnx": backend, "v2": backend}, signals, admission=Admission(4, 16))
    executor.limiter("local").set_limit(1)  # what LocalCpu does under saturation

    async def run(privacy: Privacy, route: str) -> Trace:
        subtask = Subtask("c", "text-classification", "sentiment", {"text": "x"}, privacy=privacy)
        decision = router.decide(subtask, router.context(RouteOptions(route=route)))
        trace = Trace(request_id="r")
        plan = Plan(task="sentiment", subtasks=[subtask], outputs={})
        await executor.run(plan, {"c": decision}, {}, trace, time.monotonic() + 5.0)
        return trace

    traces = await asyncio.gather(
        run(Privacy.INTERNAL, "auto"),  # takes the one local slot
        run(Privacy.INTERNAL, "auto"),  # local is full: spills to the edge at once
        run(Privacy.SENSITIVE, "local"),  # only local can serve it: waits its turn
    )
    first, spilled, local_only = (
        [(a.node, a.status, a.error_code) for a in trace.attempts] for trace in traces
    )
    assert first == [("local", "ok", None)]
    assert spilled == [("local", "error", "node_saturated"), ("edge-1", "ok", None)]
    assert local_only == [("local", "ok", None)]


def test_a_busy_host_is_seen_whatever_process_loads_it() -> None:
    """Real processes spin on every core; the counters the governor reads must see them."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.3)
        before = read_cpu_times()
        time.sleep(1.0)
        after = read_cpu_times()
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    busy = (after.busy - before.busy) / (after.total - before.total)
    assert busy > 0.8
