from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from hybridinfer.controlplane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings


@pytest.fixture
def plane(settings: Settings) -> ControlPlane:
    return ControlPlane(settings)


@pytest.fixture
def client(plane: ControlPlane) -> Iterator[TestClient]:
    """The gateway in process, with the real local tier (onnxruntime) and SQLite store."""
    with TestClient(create_app(plane)) as test_client:
        yield test_client
