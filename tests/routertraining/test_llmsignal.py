"""The LLM signal's arithmetic and its resumable cache, on a fake model with known logits."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from hybridinfer.routertraining.llmsignal import (
    FEATURES,
    HIGH_LOSS_NATS,
    MAX_TOKENS,
    cache_path,
    measure_prompts,
    prompt_signal,
    read_cache,
    summarise_losses,
    token_losses,
)

VOCAB = 4


class FakeScorer:
    """Tokens are the characters' codes mod ``VOCAB``; every position's logits are the same
    fixed row, so each NLL and entropy is known in closed form. Counts its passes."""

    fingerprint = "fake:1"

    def __init__(self, row: list[float]) -> None:
        self.row = np.asarray(row, dtype=np.float32)
        self.passes = 0

    def tokenize(self, text: str) -> list[int]:
        return [ord(char) % VOCAB for char in text]

    def logits(self, tokens: list[int]) -> npt.NDArray[np.float32]:
        self.passes += 1
        return np.tile(self.row, (len(tokens), 1))


def test_uniform_logits_give_log_vocab_loss_and_entropy() -> None:
    nll, entropy = token_losses(np.zeros((5, VOCAB)), [0, 1, 2, 3, 0])
    assert len(nll) == 4  # the first token is not predicted
    np.testing.assert_allclose(nll, math.log(VOCAB))
    np.testing.assert_allclose(entropy, math.log(VOCAB))


def test_loss_is_the_log_softmax_of_the_next_token() -> None:
    logits = np.array([[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 5.0], [9.0, 9.0, 9.0, 9.0]])
    nll, entropy = token_losses(logits, [3, 0, 3])
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(nll, [-math.log(probs[0, 0]), -math.log(probs[1, 3])])
    expected = [-(p * np.log(p)).sum() for p in probs[:2]]
    np.testing.assert_allclose(entropy, expected)
    # a confident right guess costs less than a confident wrong one
    assert nll[1] < nll[0]


def test_summary_reads_mean_spread_quantile_and_share() -> None:
    nll = np.array([1.0, 1.0, 1.0, HIGH_LOSS_NATS + 1])
    features = summarise_losses(nll, np.array([0.5, 0.5, 0.5, 0.5]), token_count=5)
    named = dict(zip(FEATURES, features, strict=True))
    assert named["mean_nll"] == pytest.approx(nll.mean())
    assert named["std_nll"] == pytest.approx(nll.std())
    assert named["p90_nll"] == pytest.approx(np.quantile(nll, 0.9))
    assert named["mean_entropy"] == pytest.approx(0.5)
    assert named["high_loss_share"] == pytest.approx(0.25)
    assert named["log_tokens"] == pytest.approx(math.log1p(5))


def test_one_token_prompt_has_zero_loss_features() -> None:
    features, tokens = prompt_signal(FakeScorer([0.0] * VOCAB), "a")
    assert tokens == 1
    assert features[:5].tolist() == [0.0] * 5


def test_long_prompts_are_truncated() -> None:
    _, tokens = prompt_signal(FakeScorer([0.0] * VOCAB), "x" * (MAX_TOKENS + 50))
    assert tokens == MAX_TOKENS


def test_cache_resumes_an_interrupted_pass(tmp_path: Path) -> None:
    prompts = ["abcd", "bbbb", "dcba", "aaaa"]
    first = FakeScorer([1.0, 0.0, 0.0, 0.0])
    measure_prompts(first, prompts[:2], tmp_path, progress=lambda done, total: None)
    assert first.passes == 2
    # an interrupted write leaves half a line: it is ignored and that prompt recomputed
    path = cache_path(tmp_path, first.fingerprint)
    with path.open("a") as cache:
        cache.write('{"key": "cut sh')
    second = FakeScorer([1.0, 0.0, 0.0, 0.0])
    measured = measure_prompts(second, prompts, tmp_path, progress=lambda done, total: None)
    assert second.passes == 2  # only the two not measured before
    assert measured.features.shape == (4, len(FEATURES))
    fresh = FakeScorer([1.0, 0.0, 0.0, 0.0])
    for row, prompt in enumerate(prompts):
        np.testing.assert_allclose(measured.features[row], prompt_signal(fresh, prompt)[0])
    assert measured.tokens.tolist() == [4, 4, 4, 4]
    assert len(read_cache(path)) == 4  # what this pass appended reads back
    assert all(json.loads(line)["seconds"] >= 0 for line in path.read_text().splitlines()[:2])


def test_another_model_does_not_reuse_the_cache(tmp_path: Path) -> None:
    measure_prompts(FakeScorer([0.0] * VOCAB), ["abc"], tmp_path, progress=lambda d, t: None)
    other = FakeScorer([0.0] * VOCAB)
    other.fingerprint = "fake:2"
    measure_prompts(other, ["abc"], tmp_path, progress=lambda d, t: None)
    assert other.passes == 1
