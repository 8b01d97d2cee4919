"""Artifact checksums and version order, and the manifest that marks a version complete."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from pydantic import ValidationError

from hybridinfer.models.artifact import Manifest, file_sha256, version_order

DIGEST = "0" * 64


def test_the_checksum_of_a_file_larger_than_one_block(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5_000  # 1.2 MiB: more than one read
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_numeric_versions_sort_by_value_and_come_before_named_ones() -> None:
    assert sorted(["10", "b", "9", "a", "100"], key=version_order) == ["9", "10", "100", "a", "b"]


@pytest.mark.parametrize(
    "field",
    [
        {"name": "../etc"},
        {"version": "1 2"},
        {"sha256": "ABC"},
        {"size": -1},
        {"card_sha256": "0" * 63},
        {"extra": 1},
    ],
)
def test_a_manifest_refuses_paths_bad_digests_and_unknown_fields(field: dict[str, object]) -> None:
    fields: dict[str, object] = {
        "name": "m",
        "version": "1",
        "sha256": DIGEST,
        "size": 4,
        "card_sha256": DIGEST,
        "published_at": 1.0,
    }
    Manifest.model_validate(fields)
    with pytest.raises(ValidationError):
        Manifest.model_validate({**fields, **field})
