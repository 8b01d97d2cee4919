"""The bundled demo models: trained from data that ships in PyPI packages, exported to ONNX.

``build_models(out_dir)`` writes ``<out_dir>/<name>/1/{model.onnx,card.json}`` for each of
``MODEL_NAMES`` (or reuses an up-to-date build) and returns their ``ModelCard``s.
``build_bundle(out_dir)`` is the default build (``up``, ``models build``): those four and the
MiniLM sentence embedder (``BUNDLE_NAMES``), MiniLM skipped with a reason when torch is missing.
"""

from hybridinfer.modelzoo.build import MODEL_NAMES, RECIPE, build_models
from hybridinfer.modelzoo.bundle import BUNDLE_NAMES, Bundle, build_bundle
from hybridinfer.modelzoo.card import ModelCard, load_card

__all__ = [
    "BUNDLE_NAMES",
    "MODEL_NAMES",
    "RECIPE",
    "Bundle",
    "ModelCard",
    "build_bundle",
    "build_models",
    "load_card",
]
