"""Shared fixtures: the bundled models (built once per machine, reused), and settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import SecretStr

from hybridinfer.settings import Settings

REPO = Path(__file__).resolve().parent.parent
ADMIN_KEY = "test-admin-key-0123456789"
NODE_TOKEN = "test-node-token-0123456789"


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The four bundled models, built on first use into ``.hybridinfer/models``."""
    from hybridinfer.modelzoo import build_models

    target = Path(os.environ.get("HYBRIDINFER_TEST_MODELS_DIR", REPO / ".hybridinfer" / "models"))
    build_models(target)
    return target


@pytest.fixture
def settings(tmp_path: Path, models_dir: Path) -> Settings:
    return Settings(
        data_dir=tmp_path,
        models_dir=models_dir,
        bootstrap_key=SecretStr(ADMIN_KEY),
        node_token=SecretStr(NODE_TOKEN),
        # Routing must not depend on how busy the shared machine is (the host's CPU is the
        # local node's load); tests of CPU admission set their own interval.
        local_cpu_interval_s=3600.0,
    )


def auth(key: str = ADMIN_KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
