from __future__ import annotations

from pathlib import Path

import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.models.embedder import Embedder, LazyEmbedder
from hybridinfer.steps.summaries import ExtractiveSummarizer, split_sentences


@pytest.fixture(scope="module")
def summarizer(models_dir: Path) -> ExtractiveSummarizer:
    return ExtractiveSummarizer(LazyEmbedder(lambda: Embedder(models_dir / "minilm-l6" / "1")))


def test_split_sentences() -> None:
    assert split_sentences("One. Two? Three!  Four") == ["One.", "Two?", "Three!", "Four"]


def test_keeps_central_sentences_in_order_and_placeholders_intact(
    summarizer: ExtractiveSummarizer,
) -> None:
    text = (
        "Sales grew strongly in the north. Write to <EMAIL_1> about sales growth. "
        "The cat sat on a mat. Northern sales growth came from new customers. "
        "Bananas are yellow. Sales in the north will keep growing."
    )
    summary = summarizer.summarize(text)
    kept = split_sentences(summary)
    assert len(kept) == 2
    originals = split_sentences(text)
    assert sorted(kept, key=originals.index) == kept
    assert "Bananas are yellow." not in kept


def test_short_text_is_its_own_summary(summarizer: ExtractiveSummarizer) -> None:
    assert summarizer.summarize("Just one sentence.") == "Just one sentence."


def test_needs_text(summarizer: ExtractiveSummarizer) -> None:
    with pytest.raises(InvalidInput):
        summarizer.run({"text": "  "})
