"""The replay table an operator reads: it says how the router was replayed, and what the
re-scored decisions alone predict."""

from __future__ import annotations

from hybridinfer.cli.change import render_report
from hybridinfer.control.replay import ReplayReport
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.rescore import rescore
from hybridinfer.store.retained import RetainedPrompt
from tests.route.test_difficulty import fake_scorer
from tests.route.test_rescore import HARD, STAGED, logged


async def test_the_cli_table_says_how_the_router_was_replayed() -> None:
    traces = [await logged(HARD, "r-hard", None)]
    staged = compile_policy(STAGED)
    prompt = RetainedPrompt("r-hard", "generate", "chat", 0.0, HARD)
    scorer, _ = fake_scorer()
    rescored = await rescore(scorer, staged, {("r-hard", "generate"): prompt})
    scorer.close()
    report = ReplayReport(staged, rescored)
    report.add(traces[0], {})
    result = report.result() | {"router": report.result()["router"] | {"note": "1 re-scored"}}
    table = render_report(result)
    assert "router: 1 re-scored" in table
    assert "re-scored  cloud   0.0 %" in table
