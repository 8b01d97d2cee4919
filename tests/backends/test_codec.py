"""The one codec of the bundled models: inputs shaped as the card says, and probabilities
turned into a label, its confidence and every label's score."""

from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.backends.codec import decode, encode
from hybridinfer.core.topology import Deployment, TensorSpec
from hybridinfer.errors import InvalidInput, UpstreamError
from tests.fakes import deployment


def digits() -> Deployment:
    served = deployment("local", "digits", quality=0.9, latency_ms=1.0)
    served.inputs = [TensorSpec("pixels", "FP32", [-1, 64])]
    return served


def test_inputs_become_one_row_of_the_cards_dtype_and_shape() -> None:
    text = encode(deployment("local", "m", quality=1, latency_ms=1), {"text": "a fine day"})
    assert text["text"].shape == (1, 1)
    assert text["text"].dtype == np.object_
    pixels = encode(digits(), {"pixels": list(range(64)), "unused": 1})
    assert pixels["pixels"].shape == (1, 64)
    assert pixels["pixels"].dtype == np.float32
    assert set(pixels) == {"pixels"}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({}, "needs input 'pixels'"),
        ({"pixels": [1.0] * 63}, r"does not fit FP32\[1, 64\]"),
        ({"pixels": ["a"] * 64}, r"does not fit FP32\[1, 64\]"),
    ],
)
def test_inputs_that_do_not_fit_are_invalid(inputs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        encode(digits(), inputs)


def test_probabilities_give_the_label_its_confidence_and_rounded_scores() -> None:
    served = deployment("local", "m", quality=1, latency_ms=1)
    answer = decode(served, {"probabilities": np.array([[0.1, 0.2345678, 0.6654322]])})
    assert answer["label"] == "positive"
    assert answer["confidence"] == pytest.approx(0.6654322)
    assert answer["scores"] == {"negative": 0.1, "neutral": 0.234568, "positive": 0.665432}


def test_a_model_without_labels_names_classes_by_index() -> None:
    served = digits()
    served.labels = []
    answer = decode(served, {"probabilities": np.array([[0.2, 0.8]], dtype=np.float32)})
    assert answer["label"] == "1"
    assert set(answer["scores"]) == {"0", "1"}


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ({}, "returned no probabilities"),
        ({"probabilities": np.array([])}, "returned no probabilities"),
        ({"probabilities": np.array([[0.5, 0.5]])}, "returned 2 scores for 3 labels"),
    ],
)
def test_outputs_that_do_not_match_the_card_are_upstream_errors(
    outputs: dict[str, np.ndarray], message: str
) -> None:
    with pytest.raises(UpstreamError, match=message):
        decode(deployment("local", "m", quality=1, latency_ms=1), outputs)
