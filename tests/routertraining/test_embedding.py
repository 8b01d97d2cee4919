"""The embedder a router was trained with: the newest built version of its model, and a clear
error for a model this machine cannot build."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.modelzoo.minilm import NAME
from hybridinfer.routertraining.embedding import open_embedder


def test_the_built_minilm_is_opened_without_exporting_it_again(minilm_models_dir: Path) -> None:
    embedder = open_embedder(minilm_models_dir, {"name": NAME})
    assert embedder.embed(["What is 2 + 2?"]).shape == (1, 384)
    assert open_embedder(minilm_models_dir).fingerprint == embedder.fingerprint


def test_another_embedding_model_must_be_built_already(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="embedding model 'bge-small' is not built"):
        open_embedder(tmp_path, {"name": "bge-small"})
