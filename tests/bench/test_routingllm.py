"""The routing benchmark's LLM-signal rows: the sample, the feature table, the skip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import routingllm
from hybridinfer.errors import ConfigError
from hybridinfer.route.learned import FeatureTable
from hybridinfer.routertraining.outcomes import Outcomes
from hybridinfer.routertraining.training import Candidate, Ensemble, fit_router


def test_a_smaller_sample_is_the_first_rows_of_a_larger_one() -> None:
    small, large = routingllm.sample_order(100, 10), routingllm.sample_order(100, 40)
    assert small.tolist() == large[:10].tolist()
    assert routingllm.sample_mask(100, 10).sum() == 10


def test_table_adds_the_llm_set_and_keeps_it_on_row_selection() -> None:
    base = FeatureTable(
        embedding=np.zeros((3, 2)), text=np.arange(3.0)[:, None], structure=np.ones((3, 1))
    )
    llm = np.arange(18.0).reshape(3, 6)
    table = routingllm.sample_table(base, np.ones(3, dtype=bool), llm)
    assert table.matrix(("text", "llm")).tolist() == np.hstack([base.text, llm]).tolist()
    assert table.matrix(("loss",)).tolist() == llm[:, :5].tolist()  # without the token count
    picked = table.rows(np.array([False, True, True]))
    assert picked.matrix(("llm",)).tolist() == llm[1:].tolist()
    with pytest.raises(ConfigError):
        routingllm.LlmFeatureTable(embedding=base.embedding, text=base.text).matrix(("llm",))


def test_an_ensemble_keeps_the_llm_members_weights() -> None:
    rng = np.random.default_rng(0)
    rows = 200
    llm = rng.normal(size=(rows, 6))
    strong = np.ones(rows, dtype=bool)
    weak = llm[:, 0] < 0  # the weak model fails where the first LLM feature is high
    table = routingllm.sample_table(
        FeatureTable(embedding=np.zeros((rows, 0)), text=rng.normal(size=(rows, 2))),
        np.ones(rows, dtype=bool),
        llm,
    )
    outcomes = Outcomes(prompts=["p"] * rows, weak=weak, strong=strong, groups=["g"] * rows)
    recipe = Ensemble((Candidate(("text",), "gain", 1.0), Candidate(("llm",), "gain", 1.0)))
    router = fit_router(table, outcomes, recipe)
    assert router.features == ("text", "llm")
    score = router.score_features(table)
    assert np.corrcoef(score, llm[:, 0])[0, 1] > 0.5


def test_without_llama_cpp_the_rows_are_skipped_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(threads: int = 1) -> routingllm.LlamaScorer:
        raise ConfigError("llama-cpp-python is missing")

    monkeypatch.setattr(routingllm, "open_scorer", missing)
    measured, why = routingllm.measure_sample(["a prompt"], tmp_path, size=1)
    assert measured is None
    assert "llama-cpp-python" in why


def test_with_too_little_in_the_cache_the_rows_are_skipped_not_run_on_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Scorer:
        fingerprint = "smollm2:test"

    monkeypatch.setattr(routingllm, "open_scorer", lambda threads=1: Scorer())
    measured, why = routingllm.measure_sample(["a prompt"] * 300, tmp_path, cached_only=True)
    assert measured is None
    assert "0 prompts of the sample are in the cache folder" in why
    assert "python -m bench.routingllm" in why
