"""Slow clients on real sockets: headers or a body dribbled a byte at a time are cut off with
408 within the timeout, while the server keeps answering everyone else."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from hybridinfer.server.serving import server_config
from hybridinfer.settings import Settings
from tests.conftest import ADMIN_KEY
from tests.gatewayserver import running_gateway
from tests.peers import free_port

pytestmark = pytest.mark.integration

TIMEOUT_S = 1.0
BACKLOG = 3001


@pytest.fixture(scope="module")
def address(
    models_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, int]]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("slow"),
        models_dir=models_dir,
        port=free_port(),
        bootstrap_key=SecretStr(ADMIN_KEY),
        header_timeout_s=TIMEOUT_S,
        body_timeout_s=TIMEOUT_S,
        listen_backlog=BACKLOG,
    )
    with running_gateway(settings):
        yield settings.host, settings.port


def dribble(address: tuple[str, int], head: bytes, tail: bytes) -> tuple[bytes, float]:
    """Send ``head`` at once, then ``tail`` one byte every 0.2 s until the server answers or
    closes; returns what it answered and after how many seconds."""
    started = time.monotonic()
    with socket.create_connection(address, timeout=10) as connection:
        connection.sendall(head)
        connection.settimeout(0.2)
        received = b""
        for byte in tail:
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                chunk = None
            if chunk == b"":
                break
            if chunk:
                received += chunk
                continue
            try:
                connection.sendall(bytes([byte]))
            except OSError:
                break
            if time.monotonic() - started > 10:
                break
        connection.settimeout(2)
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except (TimeoutError, OSError):
            pass
        return received, time.monotonic() - started


def others_are_served(address: tuple[str, int]) -> bool:
    host, port = address
    return httpx.get(f"http://{host}:{port}/healthz", timeout=2).status_code == 200


def test_headers_dribbled_past_the_timeout_get_408_and_a_closed_connection(
    address: tuple[str, int],
) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
    received, elapsed = dribble(address, head, b"X-Slow: " + b"a" * 200 + b"\r\n\r\n")
    assert received.startswith(b"HTTP/1.1 408"), received[:100]
    assert request_ids(received)[0], received
    assert elapsed < TIMEOUT_S + 1.5
    assert others_are_served(address)


def request_ids(response: bytes) -> tuple[str, str]:
    """The ``X-Request-ID`` header and the envelope's ``request_id`` of one raw answer; both
    present and equal, or the assertion says which is missing."""
    head, _, body = response.partition(b"\r\n\r\n")
    headers = dict(
        line.decode().lower().split(": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line
    )
    envelope_id = json.loads(body)["error"]["request_id"]
    assert headers.get("x-request-id") == envelope_id, (headers, envelope_id)
    return headers["x-request-id"], envelope_id


def test_a_connection_that_sends_nothing_is_closed(address: tuple[str, int]) -> None:
    started = time.monotonic()
    with socket.create_connection(address, timeout=5) as idle:
        received = idle.recv(65536)
    assert received.startswith(b"HTTP/1.1 408")
    first, _ = request_ids(received)
    with socket.create_connection(address, timeout=5) as idle:
        second, _ = request_ids(idle.recv(65536))
    assert first
    assert second != first
    assert time.monotonic() - started < TIMEOUT_S + 1.5


def test_a_body_dribbled_past_the_timeout_gets_408_in_the_envelope(
    address: tuple[str, int],
) -> None:
    body = b'{"task": "sentiment", "inputs": {"text": "' + b"a" * 300 + b'"}}'
    head = (
        b"POST /v1/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {ADMIN_KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    )
    received, elapsed = dribble(address, head, body)
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert b'"code":"request_timeout"' in received
    assert request_ids(received)[0]
    assert elapsed < TIMEOUT_S + 1.5
    assert others_are_served(address)


def test_prompt_clients_are_not_affected(address: tuple[str, int]) -> None:
    host, port = address
    with httpx.Client(base_url=f"http://{host}:{port}", timeout=5) as client:
        for _ in range(3):
            answer = client.post(
                "/v1/infer",
                headers={"Authorization": f"Bearer {ADMIN_KEY}"},
                json={"task": "sentiment", "inputs": {"text": "fine"}},
            )
            assert answer.status_code == 200
            time.sleep(TIMEOUT_S * 0.6)  # keep-alive idle below the timeout


def test_the_listen_queue_holds_the_configured_backlog(address: tuple[str, int]) -> None:
    """Past a full listen queue the kernel drops connections and clients wait out TCP's SYN
    retransmissions; the queue the socket really has is what ``ss`` reports for it."""
    listing = subprocess.run(
        ["ss", "-ltnH", f"sport = :{address[1]}"], capture_output=True, text=True, check=True
    ).stdout.split()
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    assert int(listing[2]) == min(BACKLOG, somaxconn)  # LISTEN: Recv-Q, then the backlog


def test_uvicorn_rewrites_no_forwarded_headers() -> None:
    """Nothing reads the client address or scheme, so no request pays for the rewrite."""
    assert server_config(object(), "127.0.0.1", 8080).proxy_headers is False
    assert server_config(object(), "127.0.0.1", 8080, proxy_headers=True).proxy_headers is True
