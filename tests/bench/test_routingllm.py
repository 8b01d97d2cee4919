"""The routing benchmark's LLM-signal rows: the sample, the feature table, the skip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import routingllm
from hybridinfer.errors import ConfigError
from hybridinfer.route.learned import FeatureTable


def test_a_smaller_sample_is_the_first_rows_of_a_larger_one() -> None:
    small, large = routingllm.sample_order(100, 10), routingllm.sample_order(100, 40)
    assert small.tolist() == large[:10].tolist()
    assert routingllm.sample_mask(100, 10).sum() == 10


def test_table_adds_the_llm_set_and_keeps_it_on_row_selection() -> None:
    base = FeatureTable(
        embedding=np.zeros((3, 2)), text=np.arange(3.0)[:, None], structure=np.ones((3, 1))
    )
    llm = np.array([[10.0, 11.0], [20.0, 21.0], [30.0, 31.0]])
    table = routingllm.sample_table(base, np.ones(3, dtype=bool), llm)
    assert table.matrix(("text", "llm")).tolist() == [[0, 10, 11], [1, 20, 21], [2, 30, 31]]
    picked = table.rows(np.array([False, True, True]))
    assert picked.matrix(("llm",)).tolist() == [[20, 21], [30, 31]]
    with pytest.raises(ConfigError):
        routingllm.LlmFeatureTable(embedding=base.embedding, text=base.text).matrix(("llm",))


def test_without_llama_cpp_the_rows_are_skipped_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(threads: int = 1) -> routingllm.LlamaScorer:
        raise ConfigError("llama-cpp-python is missing")

    monkeypatch.setattr(routingllm, "open_scorer", missing)
    measured, why = routingllm.measure_sample(["a prompt"], tmp_path, size=1)
    assert measured is None
    assert "llama-cpp-python" in why
