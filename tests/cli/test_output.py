"""How the CLI reports: our errors become one-line click errors, and an admin call's error
envelope becomes its message."""

from __future__ import annotations

import json

import click
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hybridinfer.cli.output import call_gateway, cli_errors, run_async
from hybridinfer.errors import ConfigError
from tests.peers import free_port, serve_asgi


def admin_api() -> Starlette:
    async def keys(request: Request) -> JSONResponse:
        if request.headers.get("authorization") != "Bearer good":
            return JSONResponse({"error": {"code": "unauthorized", "message": "bad key"}}, 401)
        body = await request.body()
        return JSONResponse({"sent": json.loads(body) if body else None})

    return Starlette(routes=[Route("/v1/keys", keys, methods=["GET", "POST"])])


def test_a_hybridinfer_error_becomes_a_click_error_with_its_message() -> None:
    with pytest.raises(click.ClickException, match=r"^policy\.yaml:3: bad$"), cli_errors():
        raise ConfigError("policy.yaml:3: bad")


def test_run_async_returns_the_result_and_turns_our_errors_into_click_errors() -> None:
    async def answer() -> int:
        return 42

    async def fail() -> None:
        raise ConfigError("no models built")

    assert run_async(answer()) == 42
    with pytest.raises(click.ClickException, match="no models built"):
        run_async(fail())


def test_an_admin_call_sends_the_key_and_body_and_reads_json() -> None:
    with serve_asgi(admin_api()) as url:
        assert call_gateway(url + "/", "good", "/v1/keys", b'{"name": "app"}') == {
            "sent": {"name": "app"}
        }
        with pytest.raises(click.ClickException, match=r"^bad key$"):
            call_gateway(url, "wrong", "/v1/keys")


def test_an_admin_call_needs_a_key_and_a_reachable_gateway() -> None:
    with pytest.raises(click.ClickException, match="an API key is needed"):
        call_gateway("http://127.0.0.1:9", None, "/v1/keys")
    with pytest.raises(click.ClickException, match=r"cannot reach http://127\.0\.0\.1"):
        call_gateway(f"http://127.0.0.1:{free_port()}", "good", "/v1/keys")
