"""Acceptance of answer reuse: two real gateway processes on one PostgreSQL and one Redis.

A hit on one replica serves the other; tenants never share; a sensitive-derived answer stays in
the private-zone store (each process's memory here) and never reaches Redis; a new model
version misses; near-miss chats (numbers, negation, names changed) miss while a paraphrase hits
semantically (the chat model is SmolLM2 on llama.cpp, the embeddings MiniLM).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis

from hybridinfer.models.catalog import deployment_info
from hybridinfer.policy.answers import SEMANTIC_THRESHOLD
from hybridinfer.policy.document import default_policy_path
from hybridinfer.server.llmserver import default_specs
from tests.conftest import ADMIN_KEY, auth
from tests.llm.conftest import RunningLlm, require_llm_extra, start_llm
from tests.peers import version_2_node
from tests.scaleout.conftest import Gateway, Launch
from tests.services import REDIS_URL, unique, unique_words

pytestmark = pytest.mark.integration

CACHE = "X-Hybridinfer-Cache"
POLICY_TAIL = """
answers:
  capabilities:
    text-classification: {mode: exact}
    chat: {mode: semantic, threshold: %s}
"""


def infer(gateway: Gateway, text: str, key: str = ADMIN_KEY, **options: Any) -> httpx.Response:
    body = {"task": "sentiment", "inputs": {"text": text}, "options": {"hedge": False, **options}}
    with httpx.Client(base_url=gateway.url, headers=auth(key), timeout=30) as client:
        response = client.post("/v1/infer", json=body)
    assert response.status_code == 200, response.text
    return response


def redis_keys(prefix: str) -> list[bytes]:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        return list(client.scan_iter(match=prefix + "*", count=500))
    finally:
        client.close()


def test_an_answer_kept_by_one_replica_serves_the_other_and_no_other_tenant(
    cluster: Launch,
) -> None:
    first, second = cluster(2, answer_cache="auto")
    text = unique_words("the staff were lovely ")
    computed = infer(first, text)
    assert computed.headers[CACHE] == "miss"
    reused = infer(second, text)
    assert reused.headers[CACHE] == "hit"
    assert reused.json()["outputs"]["label"] == computed.json()["outputs"]["label"]
    with second.client() as client:
        trace = client.get(f"/v1/traces/{reused.json()['request_id']}").json()
        other = client.post("/v1/keys", json={"name": "tenant-b", "scopes": ["infer"]}).json()
    assert trace["plan"]["reused"]["classify"]["request_id"] == computed.json()["request_id"]
    assert trace["attempts"] == []  # no model was called
    assert infer(second, text, other["key"]).headers[CACHE] == "miss"
    assert infer(first, text, other["key"]).headers[CACHE] == "hit"  # its own entry now
    assert infer(first, text, cache_scope="team-a").headers[CACHE] == "miss"
    with first.client() as client:  # revoking tenant b flushes its answers, not the admin's
        assert client.post(f"/v1/keys/{other['id']}/revoke").status_code == 200
    assert infer(second, text).headers[CACHE] == "hit"
    assert infer(second, text, cache_scope="team-a").headers[CACHE] == "hit"


def test_a_sensitive_answer_stays_in_the_private_zone_store(cluster: Launch) -> None:
    prefix = unique("hi-test:") + ":"
    first, second = cluster(2, cache_prefix=prefix, answer_cache="auto")
    text = unique("call me at 0044 20 7946 0958, the staff were lovely ")
    assert infer(first, text).headers[CACHE] == "miss"
    assert infer(first, text).headers[CACHE] == "hit"  # this process's private store
    assert infer(second, text).headers[CACHE] == "miss"  # never shared through Redis
    declared = unique("a declared secret ")
    assert infer(first, declared, privacy="sensitive").headers[CACHE] == "miss"
    assert infer(first, declared, privacy="sensitive").headers[CACHE] == "hit"
    assert redis_keys(prefix + "answers:") == []
    assert redis_keys(prefix + "private-answers:") == []
    infer(first, unique_words("plain words "))
    assert len(redis_keys(prefix + "answers:")) == 1  # the control: public answers do arrive


ROLLOUT = """
rollouts:
  - task: sentiment
    model: sentiment-small
    candidate: "2"
    percent: 100
"""


@pytest.fixture
def version_2(models_dir: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The registration of a node process serving sentiment-small version "2"."""
    with version_2_node(models_dir, tmp_path) as (url, card):
        deployment = deployment_info(card).model_dump(mode="json")
        yield {"id": "edge-v2", "tier": "edge", "zone": "private", "url": url,
               "deployments": [deployment]}  # fmt: skip


def test_a_new_model_version_misses(cluster: Launch, version_2: dict[str, Any]) -> None:
    first, second = cluster(2, static_nodes=[version_2], answer_cache="auto")
    text = unique_words("the food was cold ")
    assert infer(first, text).json()["subtasks"][0]["model"] == "sentiment-small"
    assert infer(second, text).headers[CACHE] == "hit"
    with first.client() as client:
        current = client.get("/v1/policies").json()["active"]
        body = client.get(f"/v1/policies/{current}").json()["body"]
        new = body.replace(f"version: {current}", "version: rollout-2", 1) + ROLLOUT
        applied = client.post(
            "/v1/policies", content=new, headers={"Content-Type": "application/yaml"}
        )
        assert applied.status_code in (200, 201), applied.text
    switched = infer(first, text)
    assert switched.json()["subtasks"][0]["node"] == "edge-v2"
    assert switched.headers[CACHE] == "miss"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # until the second replica reads the new policy
        reused = infer(second, text)
        if reused.json()["subtasks"][0]["node"] == "edge-v2":
            break
        time.sleep(0.2)
    assert reused.headers[CACHE] == "hit"
    assert reused.json()["subtasks"][0]["reused"]["request_id"] == switched.json()["request_id"]


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningLlm]:
    require_llm_extra()
    spec = next(
        s
        for s in default_specs(tmp_path_factory.mktemp("llm"), 1500, 0.0)
        if s.node_id == "llm-local"
    )
    running = start_llm(spec)
    yield running
    running.stop()


def chat(gateway: Gateway, text: str) -> httpx.Response:
    body = {
        "messages": [{"role": "user", "content": text}],
        "temperature": 0,
        "max_tokens": 8,
    }
    with httpx.Client(base_url=gateway.url, headers=auth(), timeout=120) as client:
        response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response


NEAR_MISSES = [
    ("What is 2 + 2?", "What is 2 + 3?"),
    ("Is Paris the capital of France?", "Is Paris not the capital of France?"),
    ("Who founded Microsoft?", "Who founded Apple?"),
]


def test_near_miss_chats_miss_and_a_paraphrase_hits_across_replicas(
    minilm_models_dir: Path, cluster: Launch, chat_model: RunningLlm, tmp_path: Path
) -> None:
    """(``minilm_models_dir`` builds the embedding model into the cluster's models folder:
    without it a replica has no semantic lookup, and the test passed only after another
    test had built it.)"""
    policy = tmp_path / "policy.yaml"
    text = default_policy_path().read_text().replace("version: default-4", "version: answers-1")
    policy.write_text(text + POLICY_TAIL % SEMANTIC_THRESHOLD)
    registration = chat_model.server.spec.registration(chat_model.server.url)
    first, second = cluster(
        2,
        policy_file=str(policy),
        static_nodes=[registration.model_dump(mode="json")],
        answer_cache="auto",
    )
    for original, near in NEAR_MISSES:
        assert chat(first, original).headers[CACHE] == "miss"
        assert chat(second, original).headers[CACHE] == "hit"
        assert chat(second, near).headers[CACHE] == "miss", near
    paraphrase = chat(second, "Tell me what 2 + 2 is.")
    assert paraphrase.headers[CACHE].startswith("semantic;similarity=0."), paraphrase.headers
    kept = chat(first, NEAR_MISSES[0][0]).json()["choices"][0]["message"]["content"]
    header, events = streamed_chat(second, NEAR_MISSES[0][0])
    assert header == "hit"
    assert events[-1] == "[DONE]"
    chunks = [orjson.loads(event) for event in events[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == kept


def streamed_chat(gateway: Gateway, text: str) -> tuple[str, list[str]]:
    """A streamed chat's cache header and its SSE data lines."""
    body = {"messages": [{"role": "user", "content": text}], "temperature": 0, "max_tokens": 8}
    with (
        httpx.Client(base_url=gateway.url, headers=auth(), timeout=120) as client,
        client.stream("POST", "/v1/chat/completions", json=body | {"stream": True}) as response,
    ):
        assert response.status_code == 200
        lines = [line.removeprefix("data: ") for line in response.iter_lines() if line]
        return response.headers[CACHE], lines
