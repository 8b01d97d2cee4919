"""One suite, run on every object store (filesystem, S3 via moto's server)."""

from __future__ import annotations

import asyncio
import hashlib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from hybridinfer.errors import InvalidInput, NotFound
from hybridinfer.models.store import ModelStore
from hybridinfer.objectstore.base import ObjectStore
from hybridinfer.objectstore.filesystem import FilesystemStore

pytestmark = pytest.mark.integration


def fetch(url: str) -> bytes:
    """A plain GET, as a node does with a signed URL."""
    with urllib.request.urlopen(url, timeout=5) as response:
        return bytes(response.read())


async def test_put_get_list_delete(object_store: ObjectStore) -> None:
    await object_store.put("a/b/one.bin", b"\x00one")
    await object_store.put("a/two.bin", b"two")
    await object_store.put("a/two.bin", b"two, replaced")
    assert await object_store.get("a/b/one.bin") == b"\x00one"
    assert await object_store.get("a/two.bin") == b"two, replaced"
    assert await object_store.list("a/") == ["a/b/one.bin", "a/two.bin"]
    assert await object_store.exists("a/two.bin")
    await object_store.delete("a/two.bin")
    await object_store.delete("a/two.bin")  # already gone: fine
    assert not await object_store.exists("a/two.bin")
    with pytest.raises(NotFound):
        await object_store.get("a/two.bin")


@pytest.mark.parametrize("key", ["../escape", "/absolute", "a//b", "a/./b", ""])
async def test_unsafe_keys_are_refused(object_store: ObjectStore, key: str) -> None:
    with pytest.raises(InvalidInput):
        await object_store.put(key, b"x")


async def test_signed_url_serves_the_object_to_a_plain_get(object_store: ObjectStore) -> None:
    await object_store.put("models/m/1/model.onnx", b"weights")
    url = await object_store.signed_url("models/m/1/model.onnx", 60)
    assert await asyncio.to_thread(fetch, url) == b"weights"
    tampered = url.replace("model.onnx", "card.json")
    with pytest.raises(urllib.error.HTTPError) as refused:
        await asyncio.to_thread(fetch, tampered)
    refused.value.close()
    assert refused.value.code in (403, 404)


async def test_model_store_keeps_the_last_versions_with_checksums(
    object_store: ObjectStore,
) -> None:
    models = ModelStore(object_store, keep_versions=3)
    card = {"inputs": [], "outputs": []}
    for version in ("1", "2", "3", "10"):
        manifest = await models.publish("m", version, f"model {version}".encode(), card)
        assert manifest.sha256 == hashlib.sha256(f"model {version}".encode()).hexdigest()
    assert await models.versions("m") == ["2", "3", "10"]
    assert not await object_store.exists("models/m/1/model.onnx")
    offers = await models.offer("m", 60)
    assert [offer.manifest.version for offer in offers] == ["2", "3", "10"]
    model = await asyncio.to_thread(fetch, offers[-1].model_url)
    assert hashlib.sha256(model).hexdigest() == offers[-1].manifest.sha256
    assert offers[-1].card["version"] == "10"


async def test_a_version_without_its_manifest_is_not_offered(object_store: ObjectStore) -> None:
    await object_store.put("models/m/5/model.onnx", b"half an upload")
    assert await ModelStore(object_store).versions("m") == []


def test_a_signed_url_whose_expiry_is_not_ascii_digits_is_refused(tmp_path: Path) -> None:
    """'¹' passes str.isdigit() but not int(): refused, never an exception."""
    store = FilesystemStore(tmp_path, b"k" * 32, "http://127.0.0.1:1")
    signature = store.signature("a/b", 4_102_444_800)
    assert store.verify("a/b", "4102444800", signature)
    assert not store.verify("a/b", "¹", signature)
