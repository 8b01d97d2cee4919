"""The gate's pseudonymisation of public calls, with fake nodes: what goes out, what comes
back, and how it fails closed under each ``on_failure``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hybridinfer.core.decision import Candidate
from hybridinfer.core.plan import Plan, Privacy, Subtask
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.errors import PrivacyViolation, PseudonymisationFailed
from hybridinfer.execute.gate import PrivacyGate
from hybridinfer.policy.document import PrivacyPolicy
from hybridinfer.policy.privacymodes import PrivacyModes
from hybridinfer.privacy.detect import Detector
from tests.fakes import deployment, node

EMAIL = "jane@example.com"
INPUTS = {"messages": [{"role": "user", "content": f"write to {EMAIL}"}]}


def candidate(zone: Zone) -> Candidate:
    tier = Tier.CLOUD if zone is Zone.PUBLIC else Tier.EDGE
    name = f"{tier.value}-1"
    return Candidate(
        deployment=deployment(name, "m", quality=0.9, latency_ms=1), node=node(name, tier, zone)
    )


PUBLIC, PRIVATE = candidate(Zone.PUBLIC), candidate(Zone.PRIVATE)


def setup(
    on_failure: str = "error", detector: Detector | None = None
) -> tuple[PrivacyGate, Subtask, Plan]:
    subtask = Subtask(id="g", capability="chat", task=None, inputs={}, privacy=Privacy.SENSITIVE)
    subtask.privacy_mode = "pseudonymise"
    plan = Plan("chat", [subtask])
    modes = PrivacyModes(capabilities={"chat": "pseudonymise"}, on_failure=on_failure)  # type: ignore[arg-type]
    policy = PrivacyPolicy(names=False)
    return PrivacyGate(plan, INPUTS, None, policy, modes, detector), subtask, plan


async def test_a_public_call_goes_out_pseudonymised_and_comes_back_restored() -> None:
    gate, subtask, plan = setup()
    deadline = time.monotonic() + 5
    await gate.clear(subtask, PUBLIC, deadline)
    sent = await gate.outbound(subtask, PUBLIC, INPUTS, deadline)
    assert sent == {"messages": [{"role": "user", "content": "write to <EMAIL_1>"}]}
    assert await gate.outbound(subtask, PRIVATE, INPUTS, deadline) is INPUTS
    answer = gate.inbound(subtask, PUBLIC, {"message": {"content": "done: <email_1>"}})
    assert answer == {"message": {"content": f"done: {EMAIL}"}}
    outcome = plan.privacy["pseudonymised"]["g"]
    assert outcome == {
        "mode": "pseudonymise",
        "restore": "ok",
        "kinds": {"EMAIL": 1},
        "values": 1,
        "restored": 1,
        "unissued": 0,
    }
    assert EMAIL not in repr(plan.privacy)


class Broken:
    kind = "EMAIL"

    def find(self, text: str, taken: Any = ()) -> list[Any]:
        raise RuntimeError("injected")


async def test_a_detector_failure_stops_every_later_call_under_error() -> None:
    gate, subtask, plan = setup(detector=Detector([Broken()]))
    deadline = time.monotonic() + 5
    with pytest.raises(PseudonymisationFailed):
        await gate.outbound(subtask, PUBLIC, INPUTS, deadline)
    for later in (PUBLIC, PRIVATE):
        with pytest.raises(PseudonymisationFailed):
            await gate.clear(subtask, later, deadline)
    assert plan.privacy["pseudonymised"]["g"]["failed"] == "detection"


async def test_under_local_only_private_deployments_answer_after_a_failure() -> None:
    gate, subtask, _ = setup(on_failure="local", detector=Detector([Broken()]))
    deadline = time.monotonic() + 5
    with pytest.raises(PseudonymisationFailed):
        await gate.outbound(subtask, PUBLIC, INPUTS, deadline)
    with pytest.raises(PrivacyViolation):
        await gate.clear(subtask, PUBLIC, deadline)
    await gate.clear(subtask, PRIVATE, deadline)  # the local answer may run


async def test_a_stream_whose_restore_fails_is_closed_upstream() -> None:
    gate, subtask, plan = setup()
    deadline = time.monotonic() + 5
    await gate.outbound(subtask, PUBLIC, INPUTS, deadline)
    closed: list[bool] = []

    async def upstream() -> AsyncIterator[dict[str, Any]]:
        try:
            yield {"delta": {"content": "to <EMAIL_1>"}, "finish_reason": None}
            yield {"delta": {"content": 42}, "finish_reason": None}
            yield {"delta": {"content": "never read"}, "finish_reason": None}
        finally:
            closed.append(True)

    held = gate._pseudonyms["g"]
    held.mapping.restore_text = None  # type: ignore[assignment,union-attr]  # restoring breaks
    pieces = gate.restoring(subtask, PUBLIC, upstream())
    with pytest.raises(PseudonymisationFailed):
        async for _ in pieces:
            pass
    assert closed == [True]
    assert plan.privacy["pseudonymised"]["g"]["restore"] == "failed"
