"""``ArtifactService``: a model's versions as JSON offers whose URLs expire after the TTL."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from hybridinfer.control.artifacts import ArtifactService
from hybridinfer.models.store import ModelStore
from hybridinfer.objectstore.filesystem import FilesystemStore


async def test_offers_every_version_oldest_first_with_urls_valid_for_the_ttl(
    tmp_path: Path,
) -> None:
    objects = FilesystemStore(tmp_path / "objects", b"k" * 32, "http://gw/v1/objects")
    models = ModelStore(objects)
    for version in ("1", "2"):
        await models.publish("m", version, f"model {version}".encode(), {"inputs": []})
    before = int(time.time())

    offers = await ArtifactService(models, url_ttl_s=90).offers("m")

    assert [offer["manifest"]["version"] for offer in offers] == ["1", "2"]
    assert offers[1]["card"]["version"] == "2"
    expires = int(parse_qs(urlsplit(offers[0]["model_url"]).query)["expires"][0])
    assert before + 90 <= expires <= int(time.time()) + 90
    assert await ArtifactService(models, url_ttl_s=90).offers("unknown") == []
