"""A staged router replayed on retained chat prompts, through the real gateway (uvicorn, real
HTTP, SQLite) with two scripted OpenAI-style chat upstreams (real HTTP too): a local one in the
private zone and a cloud one. Live chats are placed by the real difficulty head (MiniLM);
replaying a version whose threshold is changed predicts another cloud share, re-scored from
the retained sample, which those settings then serve live within ±5 points; a replay of the
live settings predicts the logged share. Off (the
default), nothing is kept and a start deletes what an earlier run kept."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from hybridinfer.control.plane import ControlPlane
from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings
from hybridinfer.store.retained import RetainedPrompts, count_retained, save_retained
from hybridinfer.store.sql import SqlStore
from tests.conftest import ADMIN_KEY, NODE_TOKEN, REPO, auth
from tests.gatewayserver import running_gateway
from tests.peers import free_port, serve_asgi

PROMPTS = yaml.safe_load((REPO / "bench" / "prompts" / "difficulty.yaml").read_text("utf-8"))
"""Written for evaluation, not the difficulty head's training data."""
LIVE = """\
version: live-1
router: {timeout_ms: 10000, calibration: reference}
"""


def staged(version: str, threshold: float) -> str:
    return (
        f"version: {version}\nrouter:\n  timeout_ms: 10000\n  calibration: reference\n"
        f"  capabilities: {{chat: {{max_quality_drop: {threshold}}}}}\n"
    )


def upstream() -> Starlette:
    async def chat(_: Request) -> Response:
        message = {"role": "assistant", "content": "ok"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return JSONResponse({"choices": [choice], "usage": {"completion_tokens": 1}})

    async def models(_: Request) -> Response:
        data = [{"id": name, "object": "model"} for name in ("big", "small")]
        return JSONResponse({"object": "list", "data": data})

    routes = [Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models)]
    return Starlette(routes=routes)


def chat_node(node_id: str, tier: Tier, zone: Zone, url: str, model: str) -> NodeRegistration:
    deployment = DeploymentInfo(
        model=model, version="1", capability="chat", quality=0.5, latency_ms=50.0
    )
    return NodeRegistration(
        id=node_id, tier=tier, zone=zone, url=url, protocol="openai", deployments=[deployment]
    )


@pytest.fixture
def gateway(tmp_path: Path, minilm_models_dir: Path) -> Iterator[httpx.Client]:
    with serve_asgi(upstream()) as url:
        settings = Settings(
            data_dir=tmp_path,
            models_dir=minilm_models_dir,
            port=free_port(),
            local_models=[],
            bootstrap_key=SecretStr(ADMIN_KEY),
            node_token=SecretStr(NODE_TOKEN),
            probe_interval_s=0.5,
            privacy_ner=False,
            answer_cache="off",
            local_cpu_interval_s=3600.0,
            static_nodes=[
                chat_node("cloud-chat", Tier.CLOUD, Zone.PUBLIC, url, "big"),
                chat_node("local-chat", Tier.LOCAL, Zone.PRIVATE, url, "small"),
            ],
            retained_prompts=True,
            retained_prompts_rate=1.0,
        )
        base = f"http://127.0.0.1:{settings.port}"
        with running_gateway(settings), httpx.Client(base_url=base, headers=auth()) as client:
            deadline = time.monotonic() + 30
            while sum(n["status"] == "ready" for n in client.get("/v1/nodes").json()["nodes"]) < 2:
                assert time.monotonic() < deadline, "the upstreams never became ready"
                time.sleep(0.1)
            assert client.post("/v1/policies", json={"policy": LIVE}).status_code == 201
            yield client


def replay(client: httpx.Client, version: str, threshold: float, traces: int) -> dict:  # type: ignore[type-arg]
    response = client.post(
        "/v1/policies?stage=true",
        content=staged(version, threshold),
        headers={"Content-Type": "application/yaml"},
    )
    assert response.status_code == 201, response.text
    report = client.post(f"/v1/policies/{version}/replay", json={"traces": traces}, timeout=120)
    assert report.status_code == 200, report.text
    return report.json()  # type: ignore[no-any-return]


def placed(client: httpx.Client, text: str, version: str) -> str:
    """The tier the router placed one chat on under ``version``, from its trace."""
    body = {"model": "auto", "messages": [{"role": "user", "content": text}]}
    response = client.post("/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    trace = client.get(f"/v1/traces/{response.headers['X-Request-ID']}").json()
    assert trace["policy_version"] == version, trace
    return str(trace["decisions"][0]["tier"])


def test_a_changed_threshold_predicts_another_cloud_share(gateway: httpx.Client) -> None:
    prompts = PROMPTS["hard"][:6] + PROMPTS["easy"][:6]
    tiers, difficulties = [], []
    for text in prompts:
        body = {"model": "auto", "messages": [{"role": "user", "content": text}]}
        response = gateway.post("/v1/chat/completions", json=body, timeout=60)
        assert response.status_code == 200, response.text
        trace = gateway.get(f"/v1/traces/{response.headers['X-Request-ID']}").json()
        (decision,) = trace["decisions"]
        assert decision["difficulty"] is not None, trace
        assert text not in response.text + str(trace)  # the trace keeps no prompt
        tiers.append(decision["tier"])
        difficulties.append(decision["difficulty"]["difficulty"])
    logged_share = tiers.count("cloud") / len(tiers)
    assert 0.0 < logged_share < 1.0, tiers  # the head split them: a threshold can move it

    same = replay(gateway, "same-2", 0.5, len(prompts))
    assert same["router"]["rescored"] == len(prompts)
    assert same["router"]["retained_prompts"] == len(prompts)
    assert same["router"]["reused_verdicts"] == 0
    assert same["overall"]["predicted"]["cloud_share"] == pytest.approx(logged_share, abs=1e-4)
    assert same["overall"]["changed"] == 0

    # A threshold between two logged difficulties, other than 0.5's split: exactly the
    # prompts above it are predicted on the cloud.
    ranked = sorted(difficulties, reverse=True)
    cloud = tiers.count("cloud")
    above = max(
        (k for k in range(1, len(ranked)) if k != cloud),
        key=lambda k: ranked[k - 1] - ranked[k],
    )
    assert ranked[above - 1] - ranked[above] > 1e-3, ranked
    threshold = round((ranked[above - 1] + ranked[above]) / 2, 6)
    moved = replay(gateway, "moved-3", threshold, len(prompts))
    assert moved["overall"]["logged"]["cloud_share"] == pytest.approx(logged_share, abs=1e-4)
    assert moved["overall"]["predicted"]["cloud_share"] == pytest.approx(
        above / len(prompts), abs=1e-4
    )
    assert moved["overall"]["changed"] == abs(above - cloud)
    assert moved["privacy_violations"] == 0

    # Served live on the same prompts, the same settings place what replay predicted.
    applied = gateway.post("/v1/policies", json={"policy": staged("moved-4", threshold)})
    assert applied.status_code == 201, applied.text
    live = [placed(gateway, text, "moved-4") for text in prompts]
    predicted = moved["overall"]["predicted"]["cloud_share"]
    assert abs(live.count("cloud") / len(live) - predicted) <= 0.05, (live, predicted)


async def _keep_one(store_url: str) -> None:
    store = SqlStore(store_url)
    await store.migrate()
    sample = RetainedPrompts(1.0, 10, 3600.0, draw=lambda: 0.0)
    sample.offer("r-1", "generate", "chat", "an earlier run's prompt", sensitive=False)
    await save_retained(store, sample, sample.drain())
    await store.close()


async def _rows(store_url: str) -> int:
    store = SqlStore(store_url)
    found = await count_retained(store)
    await store.close()
    return found


def test_off_by_default_nothing_is_kept_and_a_start_forgets(settings: Settings) -> None:
    assert settings.retained_prompts is False
    store_url = f"sqlite+aiosqlite:///{settings.data_dir / 'kept.db'}"
    asyncio.run(_keep_one(store_url))
    assert asyncio.run(_rows(store_url)) == 1
    plane = ControlPlane(settings.model_copy(update={"store_url": store_url}))
    assert plane.retained is None
    assert plane.traces.retained is None
    assert plane.difficulty is None or plane.difficulty.retained is None
    with TestClient(create_app(plane)) as client:
        assert asyncio.run(_rows(store_url)) == 0
        response = client.post(
            "/v1/policies?stage=true",
            content=staged("strict-3", 0.999),
            headers={**auth(), "Content-Type": "application/yaml"},
        )
        assert response.status_code == 201, response.text
        report = client.post("/v1/policies/strict-3/replay", headers=auth(), json={"traces": 5})
        assert report.status_code == 200, report.text
        assert report.json()["router"]["note"].startswith("no retained sample")
        with_artifact = client.post(
            "/v1/policies/strict-3/replay",
            headers=auth(),
            json={"traces": 5, "router_artifact": "/nowhere.json"},
        )
        assert with_artifact.status_code == 400, with_artifact.text
