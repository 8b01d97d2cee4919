"""Train, export, verify and measure the four bundled models; reuse them when up to date.

Layout: ``<out_dir>/<name>/<VERSION>/{model.onnx,card.json}``. Each model version is written
into ``<out_dir>/.staging`` first and renamed into place whole, so a crash never leaves a
folder that has a card (what readers take as "complete") next to a partial model.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from hybridinfer.modelzoo.card import (
    Calibration,
    Capability,
    Cascade,
    ConfidenceQuantile,
    Latency,
    Metrics,
    ModelCard,
    Task,
    TensorSpec,
    load_card,
)
from hybridinfer.modelzoo.datasets import Splits, digit_splits, sentiment_splits

# Bump whenever training, export or measurement changes: cards with another recipe are rebuilt.
RECIPE = "modelzoo-2"
VERSION = "1"
MIN_AGREEMENT = 0.995  # ONNX vs scikit-learn labels on the test split
LATENCY_WARMUP = 20
LATENCY_CALLS = 300

Progress = Callable[[str, int, int], None]
_OUTPUTS = (
    TensorSpec(name="label", datatype="INT64", shape=(-1,)),
    TensorSpec(name="probabilities", datatype="FP32", shape=(-1, -1)),
)


@dataclass(frozen=True)
class _TaskSpec:
    """How one task's data is loaded, fed to ONNX and described on the cards."""

    task: Task
    capability: Capability
    load: Callable[[], Splits]
    input: TensorSpec
    batch_size: int  # big enough to be quick, small enough for the large TF-IDF's dense rows
    small: _ModelSpec
    large: _ModelSpec


class _TaskModule(Protocol):
    """What ``sentiment`` and ``digits`` provide."""

    SMALL_DESCRIPTION: str
    LARGE_DESCRIPTION: str

    def train_small(self, x: NDArray[Any], y: NDArray[np.int64], w: NDArray[np.float64]) -> Any: ...
    def train_large(self, x: NDArray[Any], y: NDArray[np.int64], w: NDArray[np.float64]) -> Any: ...
    def to_onnx(self, model: Any) -> Any: ...
    def model_params(self, model: Any) -> dict[str, str | int | float]: ...


@dataclass(frozen=True)
class _ModelSpec:
    name: str
    description: str
    train: Callable[[NDArray[Any], NDArray[np.int64], NDArray[np.float64]], Any]
    module: _TaskModule  # export and parameters


def _model_specs(task: Task, module: _TaskModule) -> dict[str, _ModelSpec]:
    small, large = _TASK_MODELS[task]
    return {
        "small": _ModelSpec(small, module.SMALL_DESCRIPTION, module.train_small, module),
        "large": _ModelSpec(large, module.LARGE_DESCRIPTION, module.train_large, module),
    }


@dataclass(frozen=True)
class _Built:
    """One trained, exported and evaluated model, before its card exists."""

    spec: _ModelSpec
    onnx_bytes: bytes
    metrics: Metrics
    latency: Latency
    cal_labels: NDArray[np.int64]
    cal_confidence: NDArray[np.float64]
    params: dict[str, str | int | float]


# Task -> (small, large) model names, in build order; known without importing scikit-learn.
_TASK_MODELS: dict[Task, tuple[str, str]] = {
    "sentiment": ("sentiment-small", "sentiment-large"),
    "digits": ("digits-small", "digits-large"),
}


def _tasks() -> tuple[_TaskSpec, ...]:
    """The build recipes; imported late so cards and sessions work without scikit-learn."""
    try:
        from hybridinfer.modelzoo import digits, sentiment
    except ImportError as error:
        raise ImportError(
            "building the bundled models needs scikit-learn, skl2onnx and onnx: "
            "pip install 'hybridinfer[build]'"
        ) from error
    return (
        _TaskSpec(
            task="sentiment",
            capability="text-classification",
            load=sentiment_splits,
            input=TensorSpec(name="text", datatype="BYTES", shape=(-1, 1)),
            batch_size=64,
            **_model_specs("sentiment", sentiment),
        ),
        _TaskSpec(
            task="digits",
            capability="image-classification",
            load=digit_splits,
            input=TensorSpec(name="pixels", datatype="FP32", shape=(-1, digits.N_PIXELS)),
            batch_size=512,
            **_model_specs("digits", digits),
        ),
    )


MODEL_NAMES = tuple(name for pair in _TASK_MODELS.values() for name in pair)
_STEPS_PER_TASK = 6  # load; train+export+verify x2; measure x2; write


def build_models(
    out_dir: Path, progress: Progress | None = None, force: bool = False
) -> list[ModelCard]:
    """Build the four bundled models into ``out_dir`` and return their cards.

    A task whose two models already carry cards of the current ``RECIPE`` (and whose files
    match their recorded sha256) is reused without retraining unless ``force`` is set.
    ``progress(step, done, total)`` is called as steps complete (never when all is reused).
    """
    out_dir = Path(out_dir)
    reused = {} if force else _reusable(out_dir)
    # Importing scikit-learn (via _tasks) is skipped when everything is reused: fast start.
    up_to_date = len(reused) == len(_TASK_MODELS)
    pending = [] if up_to_date else [spec for spec in _tasks() if spec.task not in reused]
    total = _STEPS_PER_TASK * len(pending)
    done = 0

    def step(description: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(description, done, total)

    if pending and progress is not None:
        progress("starting", 0, total)
    cards: dict[str, list[ModelCard]] = dict(reused)
    for spec in pending:
        cards[spec.task] = _build_task(spec, out_dir, step)
    return [card for task in _TASK_MODELS for card in cards[task]]


def _reusable(out_dir: Path) -> dict[str, list[ModelCard]]:
    """Cards of tasks whose models are complete, intact and of the current recipe."""
    reusable: dict[str, list[ModelCard]] = {}
    for task, names in _TASK_MODELS.items():
        cards = [_fresh_card(out_dir / name / VERSION) for name in names]
        if all(card is not None for card in cards):
            reusable[task] = [card for card in cards if card is not None]
    return reusable


def _fresh_card(folder: Path) -> ModelCard | None:
    try:
        card = load_card(folder / "card.json")
        model = (folder / "model.onnx").read_bytes()
    except (OSError, ValidationError):
        return None
    if card.recipe != RECIPE or hashlib.sha256(model).hexdigest() != card.sha256:
        return None
    return card


def _build_task(spec: _TaskSpec, out_dir: Path, step: Callable[[str], None]) -> list[ModelCard]:
    splits = spec.load()
    step(f"loaded {spec.task} data ({len(splits.y_train)} train rows)")
    fitted = []
    for model in (spec.small, spec.large):
        started = time.perf_counter()
        estimator = model.train(splits.x_train, splits.y_train, splits.w_train)
        onnx_model = _apply_contract(
            model.module.to_onnx(estimator), spec, model, len(splits.labels)
        )
        fitted.append((estimator, onnx_model.SerializeToString()))
        step(f"trained and exported {model.name} ({time.perf_counter() - started:.1f} s)")
    built = []
    for model, (estimator, onnx_bytes) in zip((spec.small, spec.large), fitted, strict=True):
        built.append(_evaluate(spec, model, estimator, onnx_bytes, splits))
        step(f"verified and measured {model.name}")
    small, large = built
    cascade = Cascade.measure(
        large.spec.name, splits.y_cal, (small.cal_labels, small.cal_confidence), large.cal_labels
    )
    cards = [_card(spec, splits, small, cascade), _card(spec, splits, large, None)]
    for card, result in zip(cards, built, strict=True):
        _install(out_dir, card, result.onnx_bytes)
    step(f"wrote {spec.small.name} and {spec.large.name}")
    return cards


def _apply_contract(onnx_model: Any, spec: _TaskSpec, model: _ModelSpec, n_classes: int) -> Any:
    """Name the tensors as every bundled model does, check their types, stamp metadata."""
    import onnx

    graph = onnx_model.graph
    if [tensor.name for tensor in graph.input] != [spec.input.name]:
        raise RuntimeError(f"{model.name}: unexpected inputs {[t.name for t in graph.input]}")
    if len(graph.output) != 2:
        raise RuntimeError(f"{model.name}: expected label and probabilities outputs")
    for output, wanted in zip(graph.output, _OUTPUTS, strict=True):
        _rename_tensor(graph, output.name, wanted.name)
    label, probabilities = graph.output
    if label.type.tensor_type.elem_type != onnx.TensorProto.INT64:
        raise RuntimeError(f"{model.name}: label output is not int64")
    if probabilities.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        raise RuntimeError(f"{model.name}: probabilities output is not float32")
    dims = probabilities.type.tensor_type.shape.dim
    if len(dims) == 2:
        dims[1].dim_value = n_classes
    # Same training, same bytes: replace skl2onnx's random graph name and set-ordered opsets.
    graph.name = model.name
    opsets = sorted(onnx_model.opset_import, key=lambda opset: opset.domain)
    del onnx_model.opset_import[:]
    onnx_model.opset_import.extend(opsets)
    onnx_model.doc_string = model.description
    onnx_model.producer_name = "hybridinfer.modelzoo"
    del onnx_model.metadata_props[:]
    onnx.helper.set_model_props(onnx_model, {"name": model.name, "recipe": RECIPE})
    onnx.checker.check_model(onnx_model)
    return onnx_model


def _rename_tensor(graph: Any, old: str, new: str) -> None:
    if old == new:
        return
    for node in graph.node:
        node.input[:] = [new if name == old else name for name in node.input]
        node.output[:] = [new if name == old else name for name in node.output]
    for output in graph.output:
        if output.name == old:
            output.name = new


def open_session(model: Path | bytes) -> Any:
    """An onnxruntime session as the cards measure it: CPU, one intra-op thread."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # library code must not write warnings to stderr
    source = str(model) if isinstance(model, Path) else model
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def onnx_feed(session: Any, rows: NDArray[Any]) -> dict[str, NDArray[Any]]:
    """The session's input for ``rows`` of a ``Splits.x_*`` array (text or pixels)."""
    name = session.get_inputs()[0].name
    if rows.dtype == object:
        return {name: rows.reshape(-1, 1)}  # text models take a [N, 1] string tensor
    return {name: np.ascontiguousarray(rows, dtype=np.float32)}


def predict(
    session: Any, x: NDArray[Any], batch: int = 64
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Labels and probabilities for every row of ``x``, ``batch`` rows per call."""
    labels, probabilities = [], []
    for start in range(0, len(x), batch):
        feed = onnx_feed(session, x[start : start + batch])
        label, probability = session.run(["label", "probabilities"], feed)
        labels.append(label)
        probabilities.append(probability)
    return np.concatenate(labels).astype(np.int64), np.concatenate(probabilities)


def _evaluate(
    spec: _TaskSpec, model: _ModelSpec, estimator: Any, onnx_bytes: bytes, splits: Splits
) -> _Built:
    session = open_session(onnx_bytes)
    test_labels, _ = predict(session, splits.x_test, spec.batch_size)
    agreement = float(np.mean(test_labels == estimator.predict(splits.x_test)))
    if agreement < MIN_AGREEMENT:
        raise RuntimeError(
            f"{model.name}: ONNX agrees with scikit-learn on only {agreement:.2%} of test rows"
        )
    cal_labels, cal_probabilities = predict(session, splits.x_cal, spec.batch_size)
    metrics = Metrics(
        accuracy=float(np.mean(test_labels == splits.y_test)),
        n_test=len(splits.y_test),
        onnx_agreement=agreement,
    )
    return _Built(
        spec=model,
        onnx_bytes=onnx_bytes,
        metrics=metrics,
        latency=_latency(session, splits.x_test),
        cal_labels=cal_labels,
        cal_confidence=cal_probabilities.max(axis=1).astype(np.float64),
        params={**model.module.model_params(estimator), "n_train": len(splits.y_train)},
    )


def _latency(session: Any, rows: NDArray[Any]) -> Latency:
    """Single-row latency over ``LATENCY_CALLS`` different rows, after a warm-up."""
    picks = (i % len(rows) for i in range(LATENCY_CALLS))
    feeds = [onnx_feed(session, rows[row : row + 1]) for row in picks]
    for feed in feeds[:LATENCY_WARMUP]:
        session.run(None, feed)
    samples = []
    for feed in feeds:
        started = time.perf_counter()
        session.run(None, feed)
        samples.append((time.perf_counter() - started) * 1000.0)
    p50, p99 = np.percentile(samples, [50, 99])
    return Latency(p50=round(float(p50), 4), p99=round(float(p99), 4), n_calls=len(samples))


def _card(spec: _TaskSpec, splits: Splits, built: _Built, cascade: Cascade | None) -> ModelCard:
    return ModelCard(
        name=built.spec.name,
        version=VERSION,
        capability=spec.capability,
        task=spec.task,
        labels=splits.labels,
        inputs=(spec.input,),
        outputs=(
            _OUTPUTS[0],
            TensorSpec(name="probabilities", datatype="FP32", shape=(-1, len(splits.labels))),
        ),
        description=built.spec.description,
        metrics=built.metrics,
        latency_ms=built.latency,
        size_bytes=len(built.onnx_bytes),
        sha256=hashlib.sha256(built.onnx_bytes).hexdigest(),
        recipe=RECIPE,
        created_at=datetime.now(UTC),
        calibration=Calibration(
            n=len(splits.y_cal),
            accuracy=float(np.mean(built.cal_labels == splits.y_cal)),
            confidence_quantiles=ConfidenceQuantile.summarise(built.cal_confidence),
            cascade=cascade,
        ),
        params=built.params,
    )


def _install(out_dir: Path, card: ModelCard, onnx_bytes: bytes) -> None:
    """Write one model version in a staging folder, then rename it into place whole."""
    staging = out_dir / ".staging"
    staging.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{card.name}-", dir=staging))
    final = out_dir / card.name / card.version
    try:
        (scratch / "model.onnx").write_bytes(onnx_bytes)
        card.write(scratch / "card.json")  # last: a card marks the folder complete
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            # A directory cannot be renamed over a non-empty one: move the old one aside.
            final.rename(staging / f"old-{card.name}-{uuid.uuid4().hex}")
        scratch.rename(final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for leftover in staging.glob(f"old-{card.name}-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        with contextlib.suppress(OSError):
            staging.rmdir()  # only succeeds when empty, i.e. no other build is staging
