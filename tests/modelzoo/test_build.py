"""The bundled models: built once into a temporary folder, then checked against the contract."""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from hybridinfer.modelzoo import MODEL_NAMES, RECIPE, ModelCard, build_models, load_card
from hybridinfer.modelzoo.build import open_session, predict
from hybridinfer.modelzoo.card import Calibration, ConfidenceQuantile
from hybridinfer.modelzoo.datasets import digit_splits, load_tweets, split

ACCURACY_FLOORS = {"sentiment-small": 0.72, "digits-small": 0.85, "digits-large": 0.97}
CONTRACT = {
    "sentiment": ("text", "tensor(string)", "BYTES"),
    "digits": ("pixels", "tensor(float)", "FP32"),
}


@dataclass
class Build:
    folder: Path
    cards: list[ModelCard]
    steps: list[tuple[str, int, int]]
    seconds: float


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Build:
    folder = tmp_path_factory.mktemp("models")
    steps: list[tuple[str, int, int]] = []
    started = time.perf_counter()
    cards = build_models(folder, progress=lambda *step: steps.append(step))
    return Build(folder, cards, steps, time.perf_counter() - started)


def by_name(build: Build) -> dict[str, ModelCard]:
    return {card.name: card for card in build.cards}


def test_builds_the_four_models(built: Build) -> None:
    assert [card.name for card in built.cards] == list(MODEL_NAMES)
    for name in MODEL_NAMES:
        folder = built.folder / name / "1"
        assert sorted(path.name for path in folder.iterdir()) == ["card.json", "model.onnx"]
    assert not (built.folder / ".staging").exists()


def test_progress_counts_up_to_the_total(built: Build) -> None:
    done = [step[1] for step in built.steps]
    totals = {step[2] for step in built.steps}
    assert len(totals) == 1
    assert done == list(range(len(done)))
    assert done[-1] == totals.pop()
    assert all(isinstance(step[0], str) and step[0] for step in built.steps)


def test_cards_on_disk_match_the_returned_cards(built: Build) -> None:
    for card in built.cards:
        on_disk = load_card(built.folder / card.name / "1" / "card.json")
        assert on_disk == card
        assert card.version == "1"
        assert card.recipe == RECIPE
        assert card.created_at.tzinfo is not None
        assert card.description


def test_cards_describe_the_tensor_contract(built: Build) -> None:
    for card in built.cards:
        input_name, _, datatype = CONTRACT[card.task]
        width = 1 if card.task == "sentiment" else 64
        assert [spec.model_dump() for spec in card.inputs] == [
            {"name": input_name, "datatype": datatype, "shape": (-1, width)}
        ]
        assert [spec.model_dump() for spec in card.outputs] == [
            {"name": "label", "datatype": "INT64", "shape": (-1,)},
            {"name": "probabilities", "datatype": "FP32", "shape": (-1, len(card.labels))},
        ]
    cards = by_name(built)
    assert cards["sentiment-small"].labels == ("negative", "neutral", "positive")
    assert cards["digits-large"].labels == tuple("0123456789")
    assert {card.capability for card in built.cards} == {
        "text-classification",
        "image-classification",
    }


def test_sha256_and_size_match_the_file(built: Build) -> None:
    for card in built.cards:
        data = (built.folder / card.name / "1" / "model.onnx").read_bytes()
        assert card.sha256 == hashlib.sha256(data).hexdigest()
        assert card.size_bytes == len(data)


def test_accuracy_floors_and_large_beats_small(built: Build) -> None:
    cards = by_name(built)
    for name, floor in ACCURACY_FLOORS.items():
        assert cards[name].metrics.accuracy >= floor, name
    for task in ("sentiment", "digits"):
        small, large = cards[f"{task}-small"], cards[f"{task}-large"]
        assert large.metrics.accuracy > small.metrics.accuracy, task
        assert small.metrics.n_test == large.metrics.n_test > 0
    for card in built.cards:
        assert card.metrics.onnx_agreement >= 0.995


def test_latency_and_calibration_are_recorded(built: Build) -> None:
    for card in built.cards:
        assert 0 < card.latency_ms.p50 <= card.latency_ms.p99
        assert card.latency_ms.n_calls >= 200
        calibration = card.calibration
        assert calibration.n > 0
        assert 0 < calibration.accuracy <= 1
        levels = [point.q for point in calibration.confidence_quantiles]
        values = [point.confidence for point in calibration.confidence_quantiles]
        assert levels[0] == 0.0
        assert levels[-1] == 1.0
        assert len(levels) == 21
        assert values == sorted(values)
        assert values[0] >= 1 / len(card.labels) - 1e-6  # a max probability
    for task in ("sentiment", "digits"):
        cascade = by_name(built)[f"{task}-small"].calibration.cascade
        assert cascade is not None
        assert cascade.partner == f"{task}-large"
        shares = [point.cloud_share for point in cascade.points]
        assert shares == sorted(shares)
        assert by_name(built)[f"{task}-large"].calibration.cascade is None


def test_threshold_for_cloud_share_interpolates() -> None:
    quantiles = ConfidenceQuantile.summarise(np.linspace(0.4, 0.9, 101))
    calibration = Calibration(n=101, accuracy=0.5, confidence_quantiles=quantiles)
    assert calibration.threshold_for_cloud_share(0.0) == pytest.approx(0.4)
    assert calibration.threshold_for_cloud_share(0.3) == pytest.approx(0.55)
    assert calibration.threshold_for_cloud_share(0.325) == pytest.approx(0.5625)
    assert calibration.threshold_for_cloud_share(2.0) == pytest.approx(0.9)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_onnxruntime_follows_the_contract(built: Build, name: str) -> None:
    card = by_name(built)[name]
    session = open_session(built.folder / name / "1" / "model.onnx")
    input_name, input_type, _ = CONTRACT[card.task]
    [model_input] = session.get_inputs()
    assert (model_input.name, model_input.type) == (input_name, input_type)
    outputs = session.get_outputs()
    assert [(out.name, out.type) for out in outputs] == [
        ("label", "tensor(int64)"),
        ("probabilities", "tensor(float)"),
    ]
    if card.task == "sentiment":
        rows = np.array(["I love this!", "", "   ", "delayed again :( ✈️", "ok\nfine"], object)
    else:
        rows = np.vstack([np.zeros(64), np.full(64, 16.0), digit_splits().x_test[:3]])
    labels, probabilities = predict(session, rows)
    assert labels.shape == (len(rows),)
    assert labels.dtype == np.int64
    assert probabilities.shape == (len(rows), len(card.labels))
    assert probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-4)
    assert (labels == probabilities.argmax(axis=1)).all()


@pytest.mark.parametrize("name", ["sentiment-small", "sentiment-large"])
def test_text_rows_do_not_depend_on_their_batch(built: Build, name: str) -> None:
    # The ONNX tokenizer pads short rows of a batch; padding must never form an n-gram.
    session = open_session(built.folder / name / "1" / "model.onnx")
    short = "#fun"
    long = "a much longer tweet that forces the tokenizer to pad the short one #######"
    _, alone = predict(session, np.array([short], object))
    _, batched = predict(session, np.array([short, long], object))
    np.testing.assert_allclose(alone[0], batched[0], atol=1e-6)


def test_second_build_reuses_without_retraining(built: Build) -> None:
    files = [built.folder / name / "1" / "model.onnx" for name in MODEL_NAMES]
    before = [path.stat().st_mtime_ns for path in files]
    steps: list[tuple[str, int, int]] = []
    started = time.perf_counter()
    cards = build_models(built.folder, progress=lambda *step: steps.append(step))
    assert time.perf_counter() - started < 2.0
    assert steps == []
    assert cards == built.cards
    assert [path.stat().st_mtime_ns for path in files] == before


def test_stale_or_damaged_task_is_rebuilt_alone(built: Build, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    shutil.copytree(built.folder, folder)
    sentiment_model = folder / "sentiment-large" / "1" / "model.onnx"
    sentiment_mtime = sentiment_model.stat().st_mtime_ns
    (folder / "digits-large" / "1" / "model.onnx").write_bytes(b"truncated")
    steps: list[tuple[str, int, int]] = []
    cards = build_models(folder, progress=lambda *step: steps.append(step))
    assert steps[-1][1] == steps[-1][2] == 6  # one task's steps
    assert sentiment_model.stat().st_mtime_ns == sentiment_mtime
    rebuilt = {card.name: card for card in cards}["digits-large"]
    data = (folder / "digits-large" / "1" / "model.onnx").read_bytes()
    assert rebuilt.sha256 == hashlib.sha256(data).hexdigest()
    assert rebuilt.sha256 == by_name(built)["digits-large"].sha256  # deterministic bytes


def test_crash_while_writing_leaves_no_model_behind(
    built: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "models"
    shutil.copytree(built.folder, folder, ignore=shutil.ignore_patterns("digits-*"))

    def crash(self: ModelCard, path: Path) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(ModelCard, "write", crash)
    with pytest.raises(OSError, match="disk full"):
        build_models(folder)
    assert not (folder / "digits-small").exists() or not any((folder / "digits-small").iterdir())
    assert not (folder / ".staging").exists()


def test_splits_are_deterministic_disjoint_and_stratified() -> None:
    x, y, w = load_tweets()
    assert len(x) == len(set(x)) > 35_000  # duplicates merged
    assert ((w > 0) & (w <= 1)).all()
    first, second = split(x, y, ("n", "u", "p"), w), split(x, y, ("n", "u", "p"), w)
    assert (first.x_test == second.x_test).all()
    assert (first.y_cal == second.y_cal).all()
    parts = [set(first.x_train), set(first.x_cal), set(first.x_test)]
    assert sum(map(len, parts)) == len(x)
    assert len(set.union(*parts)) == len(x)
    assert len(first.y_train) / len(x) == pytest.approx(0.7, abs=0.01)
    assert len(first.y_cal) / len(x) == pytest.approx(0.1, abs=0.01)
    overall = np.bincount(y) / len(y)
    for part in (first.y_train, first.y_cal, first.y_test):
        np.testing.assert_allclose(np.bincount(part) / len(part), overall, atol=0.01)
