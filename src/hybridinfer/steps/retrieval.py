"""Retrieval over a small local knowledge base with sentence embeddings: the passages
nearest a question by cosine similarity. The base is a YAML list of passages
(``defaults/knowledge.yaml``), embedded once on first use."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from hybridinfer.errors import ConfigError, InvalidInput
from hybridinfer.models.embedder import LazyEmbedder


def default_knowledge_path() -> Path:
    return Path(__file__).resolve().parent.parent / "defaults" / "knowledge.yaml"


def load_passages(path: Path) -> list[dict[str, str]]:
    """``[{"id", "text"}]`` from a knowledge file; ConfigError if it is malformed."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the knowledge base {path}: {exc}") from None
    passages = document.get("passages") if isinstance(document, dict) else None
    if not isinstance(passages, list) or not all(
        isinstance(item, dict)
        and isinstance(item.get("id"), str)
        and isinstance(item.get("text"), str)
        for item in passages
    ):
        raise ConfigError(f"{path}: expected passages: [{{id, text}}, ...]")
    return [{"id": item["id"], "text": item["text"]} for item in passages]


class KnowledgeBase:
    """``search`` returns the ``top_k`` passages nearest a question."""

    def __init__(self, passages: list[dict[str, str]], embedder: LazyEmbedder, top_k: int = 2):
        self._passages = passages
        self._embedder = embedder
        self._top_k = top_k
        self._vectors: npt.NDArray[np.float32] | None = None
        self._lock = threading.Lock()

    def _index(self) -> npt.NDArray[np.float32]:
        with self._lock:
            if self._vectors is None:
                texts = [passage["text"] for passage in self._passages]
                self._vectors = self._embedder.get().embed(texts)
            return self._vectors

    def search(self, question: str) -> list[dict[str, str]]:
        """The nearest passages, best first."""
        vectors = self._index()
        query = self._embedder.get().embed([question])[0]
        order = np.argsort(-(vectors @ query))[: self._top_k]
        return [self._passages[index] for index in order.tolist()]

    def run(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The in-process step: ``question`` → ``passages`` (texts) and their ``ids``."""
        question = inputs.get("question")
        if not isinstance(question, str) or not question.strip():
            raise InvalidInput("input 'question' must be a non-empty string")
        found = self.search(question)
        return {"passages": [p["text"] for p in found], "ids": [p["id"] for p in found]}
