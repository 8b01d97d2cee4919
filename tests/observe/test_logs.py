"""Log lines carry the request id: the JSON and text formats in process, and a real gateway
process whose access line for a request is found by that request's id."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hybridinfer.core.tracecontext import CURRENT, new_context
from hybridinfer.observe.logs import REQUEST_ID, configure_logging, request_context
from tests.conftest import ADMIN_KEY, auth
from tests.peers import gateway_process


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    yield stream
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_warnings_and_exceptions_name_the_kind_of_a_personal_value(
    captured: io.StringIO, log_format: str
) -> None:
    configure_logging("info", log_format, captured)  # type: ignore[arg-type]
    log = logging.getLogger("hybridinfer.test")
    log.warning("upstream said: bad input %s", "jane.doe@example.com")
    try:
        raise ValueError("cannot parse +44 20 7946 0958")
    except ValueError:
        log.exception("failed")
    written = captured.getvalue()
    assert "jane.doe@example.com" not in written
    assert "7946 0958" not in written
    assert "<EMAIL>" in written
    assert "<PHONE>" in written
    assert "ValueError" in written


def test_json_lines_carry_request_and_trace_ids_extras_and_exceptions(
    captured: io.StringIO,
) -> None:
    configure_logging("info", "json", captured)
    log = logging.getLogger("hybridinfer.test")
    context = new_context()
    request_token, context_token = REQUEST_ID.set("req-1"), CURRENT.set(context)
    try:
        log.info("served %s", "it", extra={"status": 200})
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    finally:
        CURRENT.reset(context_token)
        REQUEST_ID.reset(request_token)
    log.warning("outside any request")
    served, failed, outside = (json.loads(line) for line in captured.getvalue().splitlines())
    assert served["message"] == "served it"
    assert served["level"] == "info"
    assert served["logger"] == "hybridinfer.test"
    assert served["request_id"] == "req-1"
    assert served["trace_id"] == context.trace_id_hex
    assert served["status"] == 200
    assert served["time"].endswith("+00:00")
    assert "ValueError: boom" in failed["exception"]
    assert "request_id" not in outside
    assert "trace_id" not in outside


def test_text_lines_show_the_request_id(captured: io.StringIO) -> None:
    configure_logging("debug", "text", captured)
    log = logging.getLogger("hybridinfer.test")
    token = REQUEST_ID.set("req-2")
    try:
        log.debug("inside")
    finally:
        REQUEST_ID.reset(token)
    log.debug("outside")
    inside, outside = captured.getvalue().splitlines()
    assert inside.endswith("DEBUG hybridinfer.test [req-2]: inside")
    assert outside.endswith("[-]: outside")


@pytest.mark.integration
def test_a_gateway_process_logs_a_json_access_line_with_the_request_id(
    tmp_path: Path, models_dir: Path
) -> None:
    request_id = "log-test-request-0001"
    with gateway_process(
        tmp_path / "gw", models_dir, ADMIN_KEY, "--log-format", "json", log_level="info"
    ) as (url, log):
        response = httpx.post(
            f"{url}/v1/infer",
            json={"task": "sentiment", "inputs": {"text": "great"}},
            headers={**auth(), "X-Request-ID": request_id},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        missing = httpx.get(f"{url}/v1/nope", headers=auth(), timeout=10)
        assert missing.status_code == 404
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    (access,) = [line for line in lines if line.get("request_id") == request_id]
    assert access["logger"] == "hybridinfer.access"
    assert access["message"] == "POST /v1/infer 200"
    assert access["status"] == 200
    assert access["duration_ms"] > 0
    assert len(access["trace_id"]) == 32
    not_found = [line for line in lines if line.get("message") == "GET /v1/nope 404"]
    assert not_found
    assert not_found[0]["request_id"] == missing.headers["x-request-id"]


def test_a_request_context_stamps_its_lines_and_joins_the_callers_trace(
    captured: io.StringIO,
) -> None:
    configure_logging("info", "json", captured)
    log = logging.getLogger("hybridinfer.test")
    caller = "4bf92f3577b34da6a3ce929d0e0e4736"
    with request_context("task-7", f"00-{caller}-00f067aa0ba902b7-01") as context:
        log.info("running")
        assert CURRENT.get() is context
    log.info("done")
    running, done = (json.loads(line) for line in captured.getvalue().splitlines())
    assert (running["request_id"], running["trace_id"]) == ("task-7", caller)
    assert "request_id" not in done
    assert CURRENT.get() is None
