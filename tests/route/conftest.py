"""Fixtures of the routing tests: the MiniLM embedder, exported once per machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hybridinfer.models.embedder import Embedder
from hybridinfer.modelzoo.minilm import NAME, VERSION, build_minilm
from tests.conftest import REPO


@pytest.fixture(scope="session")
def minilm_models_dir() -> Path:
    """A models folder holding ``minilm-l6`` (exported on first use, reused after)."""
    target = Path(os.environ.get("HYBRIDINFER_TEST_MODELS_DIR", REPO / ".hybridinfer" / "models"))
    build_minilm(target)
    return target


@pytest.fixture(scope="session")
def embedder(minilm_models_dir: Path) -> Embedder:
    return Embedder(minilm_models_dir / NAME / VERSION)
