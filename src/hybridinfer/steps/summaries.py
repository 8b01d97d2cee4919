"""Extractive summaries on sentence embeddings: keep the sentences closest to the text's
centroid, in their original order. Runs locally; placeholders (``<EMAIL_1>``) pass through
untouched because whole sentences are copied."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from hybridinfer.errors import InvalidInput
from hybridinfer.models.embedder import LazyEmbedder

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (split after ``.``, ``!`` or ``?`` followed by space)."""
    return [sentence.strip() for sentence in _SENTENCE_END.split(text) if sentence.strip()]


class ExtractiveSummarizer:
    """``summarize`` keeps about a third of the sentences, at most ``max_sentences``."""

    def __init__(self, embedder: LazyEmbedder, max_sentences: int = 3) -> None:
        self._embedder = embedder
        self._max_sentences = max_sentences

    def summarize(self, text: str) -> str:
        """The most central sentences of ``text``, in order."""
        sentences = split_sentences(text)
        keep = min(self._max_sentences, max(1, len(sentences) // 3))
        if len(sentences) <= keep:
            return " ".join(sentences)
        vectors = self._embedder.get().embed(sentences)
        centroid = vectors.mean(axis=0)
        scores = vectors @ centroid
        chosen = sorted(np.argsort(-scores)[:keep].tolist())
        return " ".join(sentences[index] for index in chosen)

    def run(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The in-process step: ``text`` → ``summary``."""
        text = inputs.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("input 'text' must be a non-empty string")
        return {"summary": self.summarize(text)}
