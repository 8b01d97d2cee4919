"""A staged router replayed on the retained prompt sample: a scored prompt is offered to the
sample under its request id; re-scored under a changed threshold, its decision changes, where
the logged verdict reused would not; the report counts re-scored against reused verdicts."""

from __future__ import annotations

from typing import Any

from hybridinfer.control.replay import ReplayReport
from hybridinfer.core.plan import Privacy
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.context import RouteOptions
from hybridinfer.route.difficulty import decide_reading_difficulty
from hybridinfer.route.rescore import rescore
from hybridinfer.store.retained import RetainedPrompt, RetainedPrompts
from tests.route.test_difficulty import chat, fake_scorer, router

LIVE = "version: live-1\nrouter:\n  calibration: reference\n"
"""The default knob: max quality drop 50 % (a threshold of 0.5)."""
STAGED = (
    "version: staged-2\nrouter:\n  calibration: reference\n"
    "  capabilities: {chat: {max_quality_drop: 0.95}}\n"
)
HARD, EASY = "prove it", "hello"


async def logged(text: str, request_id: str, sample: RetainedPrompts | None) -> dict[str, Any]:
    """One chat decided live (threshold 0.5), as the trace store keeps it."""
    scorer, _ = fake_scorer()
    scorer.retained = sample
    live = router(LIVE)
    subtask, inputs = chat(text)
    context = live.context(RouteOptions(), "chat")
    context.request_id = request_id
    decision = await decide_reading_difficulty(live, scorer, subtask, context, inputs)
    scorer.close()
    chosen = decision.chosen
    attempt = {
        "subtask": subtask.id,
        "deployment": chosen.deployment.id,
        "tier": chosen.node.tier.value,
        "status": "ok",
        "latency_ms": 30.0,
    }
    return {
        "request_id": request_id,
        "task": "chat",
        "plan": {"subtasks": [subtask.labels()]},
        "decisions": [decision.describe()],
        "attempts": [attempt],
    }


def kept_sample() -> RetainedPrompts:
    return RetainedPrompts(1.0, 100, 3600.0, draw=lambda: 0.0)


async def test_a_scored_prompt_is_offered_under_its_request_id() -> None:
    sample = kept_sample()
    trace = await logged(HARD, "r-hard", sample)
    (kept,) = sample.drain()
    assert (kept.request_id, kept.subtask_id, kept.capability, kept.text) == (
        "r-hard",
        "generate",
        "chat",
        HARD,
    )
    assert HARD not in str(trace)  # the trace keeps the verdict, never the prompt


async def test_nothing_is_offered_without_a_sample_or_for_a_sensitive_prompt() -> None:
    await logged(HARD, "r-1", None)  # off: the scorer has no sample, and nothing fails
    sample = kept_sample()
    scorer, _ = fake_scorer()
    scorer.retained = sample
    subtask, inputs = chat(HARD)
    subtask.privacy = Privacy.SENSITIVE
    context = router(LIVE).context(RouteOptions(), "chat")
    await decide_reading_difficulty(router(LIVE), scorer, subtask, context, inputs)
    scorer.close()
    assert sample.buffered == 0


async def test_a_changed_threshold_rescored_moves_the_decision_reused_does_not() -> None:
    traces = [await logged(HARD, "r-hard", None), await logged(EASY, "r-easy", None)]
    assert [t["decisions"][0]["tier"] for t in traces] == ["cloud", "local"]
    staged = compile_policy(STAGED)
    prompts = {
        ("r-hard", "generate"): RetainedPrompt("r-hard", "generate", "chat", 0.0, HARD),
        ("r-easy", "generate"): RetainedPrompt("r-easy", "generate", "chat", 0.0, EASY),
    }
    scorer, _ = fake_scorer()
    rescored = await rescore(scorer, staged, prompts)
    scorer.close()
    assert rescored[("r-hard", "generate")].verdict is not None
    assert rescored[("r-hard", "generate")].verdict.threshold == 0.95  # type: ignore[union-attr]

    reused = ReplayReport(staged)
    replayed = ReplayReport(staged, rescored)
    for trace in traces:
        reused.add(trace, {})
        replayed.add(trace, {})
    before, after = reused.result(), replayed.result()
    assert before["overall"]["predicted"]["cloud_share"] == 0.5  # the logged verdicts stand
    assert after["overall"]["predicted"]["cloud_share"] == 0.0  # 0.88 < 0.95: local
    assert after["overall"]["moves"] == {"cloud->local": 1}
    assert (before["router"]["rescored"], before["router"]["reused_verdicts"]) == (0, 2)
    assert before["router"]["sample"]["decisions"] == 0
    assert (after["router"]["rescored"], after["router"]["reused_verdicts"]) == (2, 0)
    sample = after["router"]["sample"]
    assert sample["decisions"] == 2
    assert (sample["logged"]["cloud_share"], sample["predicted"]["cloud_share"]) == (0.5, 0.0)


async def test_a_router_that_does_not_read_the_capability_gives_no_verdict() -> None:
    off = compile_policy("version: off-3\nrouter:\n  enabled: false\n")
    prompt = RetainedPrompt("r-1", "generate", "chat", 0.0, HARD)
    scorer, embedder = fake_scorer()
    found = await rescore(scorer, off, {("r-1", "generate"): prompt})
    scorer.close()
    assert found[("r-1", "generate")].verdict is None
    assert embedder.calls == 0
