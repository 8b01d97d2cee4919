"""The MiniLM sentence embedder: unit vectors, one text at a time, bounded token counts."""

from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.models.embedder import Embedder


def test_embeddings_are_unit_length_and_ordered(embedder: Embedder) -> None:
    texts = ["What is 2 + 2?", "Name the capital of France. " * 80, ""]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(1.0, abs=1e-4)
    alone = embedder.embed([texts[1]])[0]
    # One text per run: a vector never depends on what else was embedded with it.
    np.testing.assert_allclose(vectors[1], alone, atol=1e-6)
    assert embedder.count_tokens(texts)[1] == embedder.max_tokens
