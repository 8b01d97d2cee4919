"""The replay service on a real SQLite store: logged chats whose prompts were retained are
re-scored under a staged router, the newest first when there are more than one replay
re-reads; an artifact that is not one is refused; the note says what was done."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hybridinfer.control import replay as replay_module
from hybridinfer.control.replay import ReplayService
from hybridinfer.errors import InvalidInput
from hybridinfer.policy.document import CompiledPolicy, compile_policy
from hybridinfer.store.retained import RetainedPrompts, save_retained
from hybridinfer.store.sql import SqlStore
from tests.route.test_difficulty import fake_scorer
from tests.route.test_rescore import EASY, HARD, STAGED, logged


async def nothing() -> None:
    return None


async def service(
    tmp_path: Path, texts: dict[str, str], keep: bool = True
) -> tuple[ReplayService, SqlStore]:
    """A store holding one logged chat per request id, each ten seconds after the one before
    (and its retained prompt if ``keep``)."""
    store = SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    await store.migrate()
    sample = RetainedPrompts(1.0, 100, 3600.0, draw=lambda: 0.0)
    traces: list[dict[str, Any]] = []
    for index, (request_id, text) in enumerate(texts.items()):
        trace = await logged(text, request_id, None)
        trace |= {"status": "ok", "created_at": time.time() + index, "timings_ms": {}}
        traces.append(trace)
        sample.clock = lambda index=index: time.time() + 10.0 * index  # type: ignore[misc]
        sample.offer(request_id, "generate", "chat", text, sensitive=False)
    await store.save_traces(traces)
    if keep:
        await save_retained(store, sample, sample.drain())
    staged = compile_policy(STAGED)

    async def load(_version: str) -> CompiledPolicy:
        return staged

    scorer, _ = fake_scorer()
    return ReplayService(store, load, nothing, retained=sample, scorer=scorer), store


async def test_the_newest_retained_prompts_are_rescored_up_to_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_module, "MAX_RESCORED", 1)
    replay, store = await service(tmp_path, {"r-hard": HARD, "r-easy": EASY})
    report = await replay.replay("staged-2", traces=2)
    await store.close()
    router = report["router"]
    assert (router["retained_prompts"], router["rescored"], router["reused_verdicts"]) == (2, 1, 1)
    assert router["note"].startswith("2 retained prompts found")
    # The newer (the easy chat, local either way) was re-read; the hard one kept its verdict.
    assert router["sample"]["logged"]["cloud_share"] == 0.0
    assert report["overall"]["changed"] == 0


async def test_an_artifact_that_is_not_one_is_refused(tmp_path: Path) -> None:
    replay, store = await service(tmp_path, {"r-hard": HARD})
    broken = tmp_path / "router.json"
    broken.write_text('{"format": "something else"}')
    with pytest.raises(InvalidInput, match="not a hybridinfer-router"):
        await replay.replay("staged-2", traces=1, router_artifact=str(broken))
    await store.close()


async def test_without_a_retained_prompt_the_logged_verdicts_are_reused(tmp_path: Path) -> None:
    replay, store = await service(tmp_path, {"r-hard": HARD}, keep=False)
    report = await replay.replay("staged-2", traces=1)
    await store.close()
    assert (report["router"]["rescored"], report["router"]["reused_verdicts"]) == (0, 1)
    assert report["router"]["note"].startswith("no retained prompt among these traces")
    assert report["overall"]["changed"] == 0
