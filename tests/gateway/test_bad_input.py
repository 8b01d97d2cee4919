"""Hostile bodies: too large → 413, deeply nested or not UTF-8 → 400, on every body-reading
route; never a 500, always the error envelope."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from hybridinfer.settings import Settings
from tests.conftest import NODE_TOKEN, auth

JSON_ROUTES = [
    ("POST", "/v1/infer", None),
    ("POST", "/v1/tasks", None),
    ("POST", "/v1/chat/completions", None),
    ("POST", "/v1/embeddings", None),
    ("POST", "/v1/keys", None),
    ("POST", "/v1/nodes", NODE_TOKEN),
    ("POST", "/v1/policies", None),
    ("PUT", "/v1/rules", None),
]
NESTED = b"[" * 100_000 + b"]" * 100_000
NESTED_OBJECT = b'{"task": "sentiment", "inputs": {"text": ' + b"[" * 5000 + b"]" * 5000 + b"}}"


def envelope(response: object, status: int) -> str:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    error = response.json()["error"]  # type: ignore[attr-defined]
    assert error["message"]
    assert error["request_id"]
    assert response.headers["x-request-id"] == error["request_id"]  # type: ignore[attr-defined]
    return str(error["code"])


@pytest.mark.parametrize(("method", "path", "key"), JSON_ROUTES)
def test_bad_bodies_are_refused_cleanly(
    client: TestClient, settings: Settings, method: str, path: str, key: str | None
) -> None:
    headers = {**(auth(key) if key else auth()), "Content-Type": "application/json"}
    too_large = b'{"x": "' + b"a" * settings.max_body_bytes + b'"}'
    assert envelope(client.request(method, path, content=too_large, headers=headers), 413) == (
        "payload_too_large"
    )
    assert envelope(client.request(method, path, content=NESTED, headers=headers), 400)
    not_utf8 = client.request(method, path, content=b'{"task": "\xff\xfe"}', headers=headers)
    assert envelope(not_utf8, 400) == "invalid_encoding"
    message = not_utf8.json()["error"]["message"]
    assert message.startswith("body is not valid UTF-8: byte 0xff at offset 10"), message
    assert "surrogates" not in message
    assert envelope(client.request(method, path, content=b"{", headers=headers), 400)


def test_nesting_inside_a_valid_document_is_refused(client: TestClient) -> None:
    response = client.post("/v1/infer", content=NESTED_OBJECT, headers=auth())
    assert response.status_code in (400, 422)
    assert response.json()["error"]["code"]


@pytest.mark.parametrize("path", ["/v1/policies", "/v1/rules"])
def test_hostile_yaml_is_refused(client: TestClient, path: str) -> None:
    method = "PUT" if path == "/v1/rules" else "POST"
    headers = {**auth(), "Content-Type": "application/yaml"}
    for document in (b"a: " + b"[" * 20_000 + b"]" * 20_000, b"\xff\xfe: x", b"&a [*a]"):
        response = client.request(method, path, content=document, headers=headers)
        assert 400 <= response.status_code < 500, (document[:20], response.text)
        assert response.json()["error"]["code"]
