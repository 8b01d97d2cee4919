"""Model artifacts: checksums and the manifest a published version carries."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def version_order(version: str) -> tuple[int, str]:
    """Sort key: numeric versions by value (``10`` after ``9``), others alphabetically."""
    return (
        (len(version), version) if version.isascii() and version.isdigit() else (1 << 30, version)
    )


class Manifest(BaseModel):
    """What a publisher recorded about one model version; written last, so it marks the
    version complete. Nodes load ``model.onnx`` only if its sha256 matches ``sha256``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    version: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)
    card_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    published_at: float


class ArtifactOffer(BaseModel):
    """One version as the control plane offers it to nodes: the manifest plus signed URLs."""

    manifest: Manifest
    model_url: str
    card_url: str
    card: dict[str, Any] = Field(default_factory=dict)
