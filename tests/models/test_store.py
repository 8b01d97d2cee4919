"""Model versions in an object store, beyond the shared object store suite
(tests/objectstore): bad names, broken manifests and half-uploaded cards."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybridinfer.errors import InvalidInput, UpstreamError
from hybridinfer.models.store import ModelStore
from hybridinfer.objectstore.filesystem import FilesystemStore


@pytest.fixture
def models(tmp_path: Path) -> ModelStore:
    objects = FilesystemStore(tmp_path / "objects", b"signing-key", "http://objects")
    return ModelStore(objects, keep_versions=2)


async def test_a_name_that_is_not_a_path_segment_is_refused(models: ModelStore) -> None:
    with pytest.raises(InvalidInput, match="cannot publish m/x:1"):
        await models.publish("m/x", "1", b"onnx", {})
    assert await models.objects.list("models/") == []


async def test_publishing_stamps_the_card_and_prunes_to_the_last_versions(
    models: ModelStore,
) -> None:
    for version in ("1", "2", "3"):
        await models.publish("m", version, b"onnx " + version.encode(), {"name": "ignored"})
    assert await models.versions("m") == ["2", "3"]
    assert await models.objects.list("models/m/1/") == []
    (older, newer) = await models.offer("m", 60)
    assert newer.card == {"name": "m", "version": "3"}
    assert newer.model_url.startswith("http://objects/models/m/3/model.onnx?")
    assert older.manifest.size == len(b"onnx 2")


async def test_a_malformed_manifest_is_an_upstream_error(models: ModelStore) -> None:
    await models.objects.put("models/m/1/manifest.json", b'{"name": "m"}')
    with pytest.raises(UpstreamError, match="manifest of m:1 is malformed"):
        await models.manifest("m", "1")


async def test_a_version_whose_card_is_unreadable_is_not_offered(models: ModelStore) -> None:
    await models.publish("m", "1", b"one", {})
    await models.publish("m", "2", b"two", {})
    await models.objects.put("models/m/2/card.json", b"{not json")
    assert [offer.manifest.version for offer in await models.offer("m", 60)] == ["1"]
    await models.objects.delete("models/m/1/card.json")
    assert await models.offer("m", 60) == []
