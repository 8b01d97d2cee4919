"""A slow cloud link moves latency-sensitive traffic local within 3 s, and back when it heals.

Real processes: `hybridinfer up` with its cloud node; the delay is injected on the node
(`/admin/faults`, as Envoy's fault filter does), so the gateway sees it through its RTT probes
and its own calls, exactly as it would see a slow link.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from tests.e2e.conftest import NODE_TOKEN, Running, cloud_ready, wait_until

pytestmark = pytest.mark.integration

Launch = Callable[..., Running]
CANDIDATE_TEXTS = [
    "ok",
    "hmm",
    "the movie",
    "whatever",
    "it is what it is",
    "not sure about this one",
    "meh I guess",
    "so that happened",
    "well then",
    "interesting",
    "today is monday",
    "the update came out",
    "I have no words",
    "could be worse could be better",
    "news at eleven",
]


def tier_of(client: httpx.Client, text: str) -> str:
    response = client.post("/v1/infer", json={"task": "sentiment", "inputs": {"text": text}})
    assert response.status_code == 200, response.text
    return str(response.json()["subtasks"][0]["tier"])


def set_delay(running: Running, delay_ms: float) -> None:
    node_port = int(running.url.rsplit(":", 1)[1]) + 1
    response = httpx.put(
        f"http://127.0.0.1:{node_port}/admin/faults",
        json={"delay_ms": delay_ms},
        headers={"Authorization": f"Bearer {NODE_TOKEN}"},
    )
    assert response.status_code == 200, response.text


def drive(client: httpx.Client, texts: list[str], seconds: float) -> list[tuple[float, str]]:
    """Send the texts round-robin for ``seconds``; (start time, tier) of each request."""
    seen = []
    started = time.monotonic()
    index = 0
    while time.monotonic() - started < seconds:
        sent = time.monotonic() - started
        seen.append((sent, tier_of(client, texts[index % len(texts)])))
        index += 1
    return seen


def test_cloud_latency_of_250ms_moves_sentiment_local_within_3s_and_back(launch: Launch) -> None:
    running = launch()
    wait_until(lambda: cloud_ready(running), 30, "cloud node registered", running)
    with running.client() as client:
        escalating = [text for text in CANDIDATE_TEXTS if tier_of(client, text) == "cloud"]
        assert escalating, "no candidate text escalates to the cloud under the cascade"

        set_delay(running, 250)
        shifted = drive(client, escalating, seconds=6.0)
        late = [tier for sent, tier in shifted if sent >= 3.0]
        assert late, "no request was sent after the 3 s mark"
        assert set(late) == {"local"}, f"cloud still used after 3 s: {shifted}"

        set_delay(running, 0)
        healed = drive(client, escalating, seconds=8.0)
        assert "cloud" in {tier for sent, tier in healed if sent >= 3.0}, healed
