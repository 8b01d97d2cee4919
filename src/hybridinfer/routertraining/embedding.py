"""The embedder a router is trained or evaluated with, exported on first use.

Serving reads a built embedding model from the catalog; only training and the benchmarks may
export MiniLM on demand (that needs torch, the ``build`` extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hybridinfer.errors import ConfigError
from hybridinfer.models.embedder import Embedder


def open_embedder(models_dir: Path, trained_with: dict[str, Any] | None = None) -> Embedder:
    """The embedder a router needs, exporting MiniLM into ``models_dir`` on first use."""
    from hybridinfer.models.catalog import versions
    from hybridinfer.modelzoo import minilm

    name = (trained_with or {}).get("name", minilm.NAME)
    if not versions(models_dir, name):
        if name != minilm.NAME:
            raise ConfigError(f"embedding model {name!r} is not built in {models_dir}")
        try:
            minilm.build_minilm(models_dir)
        except ImportError as error:
            raise ConfigError(
                f"{name} is not built in {models_dir} and cannot be exported here "
                f"({error.name} is missing): install the build extra or run "
                "`hybridinfer models build`"
            ) from None
    return Embedder(models_dir / name / versions(models_dir, name)[-1])
