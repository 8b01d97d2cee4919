"""Object stores: large blobs and model artifacts (filesystem default, S3 API)."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hybridinfer.objectstore.base import ObjectStore
    from hybridinfer.settings import Settings


def open_store(settings: Settings) -> ObjectStore:
    """The object store the settings name (``object_store``: filesystem or s3)."""
    from hybridinfer.errors import ConfigError

    if settings.object_store == "s3":
        if not settings.s3_bucket:
            raise ConfigError("object_store s3 needs s3_bucket")
        from hybridinfer.objectstore.s3 import S3Store

        return S3Store(settings.s3_bucket, settings.s3_prefix, settings.s3_endpoint_url)
    from hybridinfer.objectstore.filesystem import FilesystemStore

    key = settings.object_signing_key
    signing_key = key.get_secret_value().encode() if key else secrets.token_bytes(32)
    public = (settings.public_url or f"http://{settings.host}:{settings.port}").rstrip("/")
    root = settings.objects_dir or settings.data_dir / "objects"
    return FilesystemStore(root, signing_key, public + "/v1/objects")
