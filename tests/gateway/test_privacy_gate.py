"""The privacy gate through the whole gateway: a public node that records every call it gets,
the real name model (or none), and requests whose only personal data is a name."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from hybridinfer.control.plane import ControlPlane
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.gateway.app import create_app
from hybridinfer.privacy.ner import NameFinder
from hybridinfer.settings import Settings
from tests.conftest import auth
from tests.fakes import deployment, node, recording_node
from tests.peers import serve_asgi

NAME_ONLY = "Maria Gonzalez wrote to say the parcel arrived."


@pytest.fixture
def seen() -> list[dict[str, str]]:
    return []


@pytest.fixture
def cloud_url(seen: list[dict[str, str]]) -> Iterator[str]:
    with serve_asgi(recording_node(seen)) as url:
        yield url


async def gateway(
    settings: Settings, cloud_url: str
) -> AsyncIterator[tuple[ControlPlane, httpx.AsyncClient]]:
    plane = ControlPlane(settings.model_copy(update={"privacy_ner": True}))
    cloud = node(
        "cloud-1", Tier.CLOUD, Zone.PUBLIC, deployment("cloud-1", "m", quality=0.99, latency_ms=5)
    )
    cloud.url = cloud_url
    app = create_app(plane)
    await plane.start()
    plane.registry.add(cloud)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            # No placement rules: prefer=quality alone ranks the public node first.
            plain = {"policy": "version: plain-1\n"}
            assert (
                await client.post("/v1/policies", json=plain, headers=auth())
            ).status_code == 201
            yield plane, client
    finally:
        await plane.stop()


@pytest.fixture
async def without_model(
    settings: Settings, cloud_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    """The `ner` extra removed: the finder is configured (privacy_ner) but missing."""
    monkeypatch.setattr(NameFinder, "available", staticmethod(lambda: False))
    async for _, client in gateway(settings, cloud_url):
        yield client


@pytest.fixture
async def with_model(settings: Settings, cloud_url: str) -> AsyncIterator[httpx.AsyncClient]:
    if not NameFinder.available():
        pytest.fail("the `ner` extra is part of the dev install")
    async for _, client in gateway(settings, cloud_url):
        yield client


def infer(text: str, **options: object) -> dict[str, object]:
    return {"task": "sentiment", "inputs": {"text": text}, "options": options}


async def test_without_the_model_a_forced_public_call_is_refused(
    without_model: httpx.AsyncClient, seen: list[dict[str, str]]
) -> None:
    response = await without_model.post(
        "/v1/infer", json=infer("the weather is fine", route="cloud"), headers=auth()
    )
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "privacy_violation"
    assert seen == []


async def test_without_the_model_requests_still_answer_privately(
    without_model: httpx.AsyncClient, seen: list[dict[str, str]]
) -> None:
    # prefer=quality ranks the cloud first; the gate refuses it and the chain answers locally
    response = await without_model.post(
        "/v1/infer", json=infer("the weather is fine", prefer="quality"), headers=auth()
    )
    assert response.status_code == 200, response.text
    assert response.json()["subtasks"][0]["tier"] == "local"
    assert seen == []
    trace = (
        await without_model.get(f"/v1/traces/{response.json()['request_id']}", headers=auth())
    ).json()
    assert trace["plan"]["privacy"]["detector_failed"] == ["text"]


async def test_a_name_alone_keeps_the_request_private(
    with_model: httpx.AsyncClient, seen: list[dict[str, str]]
) -> None:
    refused = await with_model.post(
        "/v1/infer", json=infer(NAME_ONLY, route="cloud"), headers=auth()
    )
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "privacy_violation"
    local = await with_model.post(
        "/v1/infer", json=infer(NAME_ONLY, prefer="quality"), headers=auth()
    )
    assert local.status_code == 200, local.text
    assert local.json()["subtasks"][0]["tier"] == "local"
    assert seen == []
    trace = (
        await with_model.get(f"/v1/traces/{local.json()['request_id']}", headers=auth())
    ).json()
    assert trace["plan"]["privacy"]["kinds"].get("NAME") == 1
    assert "Gonzalez" not in str(trace)
    # the node is in the path: text without personal data does reach it
    calm = await with_model.post(
        "/v1/infer", json=infer("what a calm evening", route="cloud"), headers=auth()
    )
    assert calm.status_code == 200, calm.text
    assert len(seen) == 1


async def test_an_idea_named_after_someone_or_a_country_may_reach_the_public_node(
    with_model: httpx.AsyncClient, seen: list[dict[str, str]]
) -> None:
    for text in ("Dijkstra's algorithm is elegant.", "The trains in Japan are wonderful."):
        sent = await with_model.post("/v1/infer", json=infer(text, route="cloud"), headers=auth())
        assert sent.status_code == 200, sent.text
        trace = (
            await with_model.get(f"/v1/traces/{sent.json()['request_id']}", headers=auth())
        ).json()
        assert trace["plan"]["privacy"]["kinds"] == {}
    assert len(seen) == 2
    beside = "Maria Gonzalez loves Dijkstra's algorithm and the trains in Japan."
    refused = await with_model.post("/v1/infer", json=infer(beside, route="cloud"), headers=auth())
    assert refused.status_code == 403, refused.text
    assert len(seen) == 2
