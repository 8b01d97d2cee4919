"""50 concurrent requests against a budget that allows 10 cloud calls: at most 10 go to cloud."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import auth
from tests.e2e.conftest import Running, cloud_ready, wait_until

pytestmark = pytest.mark.integration

Launch = Callable[..., Running]
# The cloud node costs 0.0002 per call (`cloud_cost_per_call`): room for 10 calls, not 11.
POLICY = """\
version: budget-10
budget: {period: day, global_limit: 0.0021, when_exhausted: local}
"""


async def burst(url: str, count: int) -> list[dict[str, object]]:
    async with httpx.AsyncClient(base_url=url, headers=auth(), timeout=30) as client:
        body = {"task": "sentiment", "inputs": {"text": "fine"}, "options": {"prefer": "quality"}}
        responses = await asyncio.gather(
            *(client.post("/v1/infer", json=body) for _ in range(count))
        )
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    return [r.json() for r in responses]


def test_concurrent_requests_never_overshoot_the_cloud_budget(launch: Launch) -> None:
    running = launch()
    wait_until(lambda: cloud_ready(running), 30, "cloud node registered", running)
    with running.client() as client:
        applied = client.post("/v1/policies", json={"policy": POLICY})
        assert applied.status_code == 201, applied.text
    answers = asyncio.run(burst(running.url, 50))
    tiers = [answer["subtasks"][0]["tier"] for answer in answers]  # type: ignore[index]
    assert tiers.count("cloud") == 10
    assert tiers.count("local") == 40
    node_port = int(running.url.rsplit(":", 1)[1]) + 1
    stats = httpx.get(f"http://127.0.0.1:{node_port}/v2/models/sentiment-large/stats").json()
    assert stats["model_stats"][0]["inference_count"] == 10
