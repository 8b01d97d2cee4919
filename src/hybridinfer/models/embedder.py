"""Sentence embeddings at serve time: onnxruntime + ``tokenizers``, no torch.

Reads a model folder written by ``hybridinfer.modelzoo.minilm.build_minilm``
(``model.onnx``, ``tokenizer.json``, ``card.json``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import orjson
from tokenizers import Tokenizer

from hybridinfer.errors import ConfigError


class Embedder:
    """L2-normalised sentence embeddings ``[N, dimension]`` from an exported MiniLM.

    ``batch_size`` defaults to 1: the int8 model quantises activations with one scale per
    batch, so a text embedded beside others comes out slightly different (cosine ~0.999)
    from the same text alone. One text per run keeps training, evaluation and serving
    identical for ~20 % more time; raise it where throughput matters more than that.
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        batch_size: int = 1,
        max_tokens: int | None = None,
        threads: int = 0,
    ) -> None:
        model_dir = Path(model_dir)
        missing = [
            name for name in ("model.onnx", "tokenizer.json") if not (model_dir / name).is_file()
        ]
        if missing:
            raise ConfigError(f"embedding model in {model_dir} lacks {', '.join(missing)}")
        card_path = model_dir / "card.json"
        card = orjson.loads(card_path.read_bytes()) if card_path.is_file() else {}
        self.name: str = card.get("name", model_dir.parent.name)
        self.dimension: int = int(card.get("dimension", 384))
        self.batch_size = batch_size
        self.max_tokens: int = max_tokens or int(card.get("max_tokens", 256))
        self.sha256: str = (
            card.get("sha256")
            or hashlib.sha256((model_dir / "model.onnx").read_bytes()).hexdigest()
        )
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer.no_padding()  # padding is done per batch, to the longest text in it
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(
            str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``; rows come back in the order given, each of unit length."""
        result = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return result
        encodings = self._tokenizer.encode_batch(list(texts))
        # Batches of similar length waste little time on padding.
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[index].ids) for index in chunk)
            input_ids = np.zeros((len(chunk), width), dtype=np.int64)
            attention = np.zeros((len(chunk), width), dtype=np.int64)
            for row, index in enumerate(chunk):
                ids = encodings[index].ids
                input_ids[row, : len(ids)] = ids
                attention[row, : len(ids)] = 1
            (output,) = self._session.run(
                ["embedding"], {"input_ids": input_ids, "attention_mask": attention}
            )
            result[chunk] = output
        return result

    @property
    def fingerprint(self) -> str:
        """Identifies the embeddings this object produces (model, truncation, batching)."""
        return f"{self.name}:{self.sha256}:{self.max_tokens}:{self.batch_size}"

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Token counts after truncation, as the model sees them."""
        return [len(encoding.ids) for encoding in self._tokenizer.encode_batch(list(texts))]


class LazyEmbedder:
    """Loads the embedding model on first use (a gateway that never summarises never pays)."""

    def __init__(self, load: Callable[[], Embedder]) -> None:
        self._load = load
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()

    def get(self) -> Embedder:
        """The loaded embedder."""
        with self._lock:
            if self._embedder is None:
                self._embedder = self._load()
            return self._embedder
