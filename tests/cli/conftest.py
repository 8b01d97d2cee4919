"""Fixtures of the CLI tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hybridinfer.modelzoo.minilm import build_minilm
from tests.conftest import REPO


@pytest.fixture(scope="session")
def minilm_models_dir() -> Path:
    """A models folder holding ``minilm-l6`` (exported on first use, reused after)."""
    target = Path(os.environ.get("HYBRIDINFER_TEST_MODELS_DIR", REPO / ".hybridinfer" / "models"))
    build_minilm(target)
    return target
