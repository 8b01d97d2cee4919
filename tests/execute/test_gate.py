"""The privacy gate: the last check before a call leaves the private zone."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from hybridinfer.core.decision import Candidate
from hybridinfer.core.plan import Plan, Privacy, Subtask
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.decompose.names import NameCheck
from hybridinfer.errors import PrivacyViolation
from hybridinfer.execute.gate import PrivacyGate
from hybridinfer.policy.document import PrivacyPolicy
from hybridinfer.privacy.findings import Finding
from tests.fakes import deployment, node


def candidate(zone: Zone) -> Candidate:
    tier = Tier.CLOUD if zone is Zone.PUBLIC else Tier.EDGE
    served = deployment(f"{tier.value}-node", "m", quality=0.8, latency_ms=5.0)
    return Candidate(served, node(f"{tier.value}-node", tier, zone, served))


class Finder:
    """Finds the word 'Jane' as a name; counts its calls."""

    def __init__(self, delay_s: float = 0.0, broken: bool = False, load_s: float = 0.0) -> None:
        self.calls = 0
        self.delay_s = delay_s
        self.broken = broken
        self.load_s = load_s

    def load(self) -> None:
        time.sleep(self.load_s)

    def find(self, text: str) -> list[Finding]:
        return self(text)

    def find_many(self, texts: list[str]) -> list[list[Finding]]:
        return [self(text) for text in texts]

    def __call__(self, text: str) -> list[Finding]:
        self.calls += 1
        if self.broken:
            raise RuntimeError("the model is gone")
        time.sleep(self.delay_s)
        start = text.find("Jane")
        return [] if start < 0 else [Finding("NAME", start, start + 4, "Jane", "ner")]


def soon(seconds: float = 5.0) -> float:
    return time.monotonic() + seconds


def setup(text: str, finder: Finder | None, **policy: object) -> tuple[PrivacyGate, Subtask, Plan]:
    subtask = Subtask("s", "chat", "chat", {"text": "$inputs.text"}, raw_inputs=frozenset({"text"}))
    plan = Plan("chat", [subtask])
    plan.privacy = {"kinds": {}, "names_checked": [], "detector_failed": []}
    names = NameCheck(finder)
    return PrivacyGate(plan, {"text": text}, names, PrivacyPolicy(**policy)), subtask, plan  # type: ignore[arg-type]


async def test_private_zone_calls_pass_without_reading() -> None:
    finder = Finder()
    gate, subtask, _ = setup("Jane wrote", finder)
    await gate.clear(subtask, candidate(Zone.PRIVATE), soon())
    assert finder.calls == 0
    assert subtask.privacy is Privacy.INTERNAL


async def test_a_sensitive_subtask_never_reaches_the_public_zone() -> None:
    gate, subtask, _ = setup("plain", Finder())
    subtask.privacy = Privacy.SENSITIVE
    with pytest.raises(PrivacyViolation):
        await gate.clear(subtask, candidate(Zone.PUBLIC), soon())


async def test_a_name_makes_the_subtask_sensitive_and_refuses_the_call() -> None:
    gate, subtask, plan = setup("Jane wrote", Finder())
    with pytest.raises(PrivacyViolation):
        await gate.clear(subtask, candidate(Zone.PUBLIC), soon())
    assert subtask.privacy is Privacy.SENSITIVE
    assert plan.privacy["kinds"] == {"NAME": 1}
    assert plan.privacy["names_checked"] == ["text"]
    assert "Jane" not in repr(plan.privacy)


async def test_inputs_the_request_does_not_hold_are_not_read() -> None:
    finder = Finder()
    subtask = Subtask(
        "s", "chat", "chat", {"text": "$inputs.text"}, raw_inputs=frozenset({"text", "tools"})
    )
    plan = Plan("chat", [subtask])
    plan.privacy = {"kinds": {}, "names_checked": [], "detector_failed": []}
    gate = PrivacyGate(plan, {"text": "the weather is fine"}, NameCheck(finder), PrivacyPolicy())
    await gate.clear(subtask, candidate(Zone.PUBLIC), soon())
    assert plan.privacy["names_checked"] == ["text"]
    assert finder.calls == 1
    assert subtask.privacy is Privacy.INTERNAL


async def test_each_input_is_read_once_per_request() -> None:
    finder = Finder()
    gate, subtask, _ = setup("the weather is fine", finder)
    await gate.clear(subtask, candidate(Zone.PUBLIC), soon())
    await asyncio.gather(*(gate.clear(subtask, candidate(Zone.PUBLIC), soon()) for _ in range(3)))
    assert finder.calls == 1
    assert subtask.privacy is Privacy.INTERNAL


async def test_a_text_read_before_is_answered_without_a_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    finder = Finder()
    names = NameCheck(finder)
    for text, sensitive in (("Jane wrote", True), ("the weather is fine", False)):
        subtask = Subtask("s", "chat", "chat", {"t": "$inputs.t"}, raw_inputs=frozenset({"t"}))
        plan = Plan("chat", [subtask])
        plan.privacy = {"kinds": {}, "names_checked": [], "detector_failed": []}
        first = PrivacyGate(plan, {"t": text}, names, PrivacyPolicy())
        with contextlib.suppress(PrivacyViolation):
            await first.clear(subtask, candidate(Zone.PUBLIC), soon())
        calls = finder.calls
        again = Subtask("s", "chat", "chat", {"t": "$inputs.t"}, raw_inputs=frozenset({"t"}))
        later = Plan("chat", [again])
        later.privacy = {"kinds": {}, "names_checked": [], "detector_failed": []}
        gate = PrivacyGate(later, {"t": text}, names, PrivacyPolicy())
        monkeypatch.setattr(asyncio, "ensure_future", no_task)
        if sensitive:
            with pytest.raises(PrivacyViolation):
                await gate.clear(again, candidate(Zone.PUBLIC), soon())
            assert later.privacy["kinds"] == {"NAME": 1}
        else:
            await gate.clear(again, candidate(Zone.PUBLIC), soon())
            assert again.privacy is Privacy.INTERNAL
        monkeypatch.undo()
        assert finder.calls == calls  # remembered, not read again
        assert later.privacy["names_checked"] == ["t"]


def no_task(*args: object, **kwargs: object) -> None:
    raise AssertionError("a remembered text scheduled a read")


@pytest.mark.parametrize(
    "finder",
    [None, Finder(broken=True), Finder(delay_s=0.5)],
    ids=["no model", "model error", "timeout"],
)
async def test_it_fails_closed(finder: Finder | None) -> None:
    gate, subtask, plan = setup("the weather is fine", finder, names_timeout_ms=50.0)
    with pytest.raises(PrivacyViolation):
        await gate.clear(subtask, candidate(Zone.PUBLIC), soon())
    assert subtask.privacy is Privacy.SENSITIVE
    assert plan.privacy["detector_failed"] == ["text"]


async def test_a_request_waits_for_the_model_to_load_within_its_deadline() -> None:
    gate, subtask, _ = setup("the weather is fine", Finder(load_s=0.3), names_timeout_ms=50.0)
    await gate.clear(subtask, candidate(Zone.PUBLIC), soon())  # the load is not the read
    assert subtask.privacy is Privacy.INTERNAL
    late, other, _ = setup("the weather is fine", Finder(load_s=0.5))
    with pytest.raises(PrivacyViolation):  # the deadline passes while the model loads
        await late.clear(other, candidate(Zone.PUBLIC), soon(0.05))


def test_a_process_without_a_name_finder_reads_no_names() -> None:
    subtask = Subtask("s", "chat", "chat", {}, raw_inputs=frozenset({"text"}))
    plan = Plan("chat", [subtask])
    gate = PrivacyGate(plan, {"text": "Jane"}, None, PrivacyPolicy())
    asyncio.run(gate.clear(subtask, candidate(Zone.PUBLIC), soon()))
    assert subtask.privacy is Privacy.INTERNAL


async def test_a_policy_may_keep_the_label_when_the_model_fails() -> None:
    gate, subtask, _ = setup("plain", None, on_detector_failure="internal")
    await gate.clear(subtask, candidate(Zone.PUBLIC), soon())
    assert subtask.privacy is Privacy.INTERNAL


async def test_a_policy_may_skip_names() -> None:
    finder = Finder()
    gate, subtask, _ = setup("Jane wrote", finder, names=False)
    await gate.clear(subtask, candidate(Zone.PUBLIC), soon())
    assert finder.calls == 0
