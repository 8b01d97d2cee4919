from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway.app import create_app
from hybridinfer.settings import Settings
from tests.peers import version_2_node


@pytest.fixture
def plane(settings: Settings) -> ControlPlane:
    return ControlPlane(settings)


@pytest.fixture
def client(plane: ControlPlane) -> Iterator[TestClient]:
    """The gateway in process, with the real local tier (onnxruntime) and SQLite store."""
    with TestClient(create_app(plane)) as test_client:
        yield test_client


@pytest.fixture
def version_2(models_dir: Path, tmp_path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    """A node process serving sentiment-small as version "2" (the same weights, a new card)."""
    with version_2_node(models_dir, tmp_path) as (url, card):
        yield url, card
