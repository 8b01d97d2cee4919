"""Objects as files under a root directory, with HMAC-signed URLs.

A signed URL is ``{base_url}/{key}?expires=<unix time>&signature=<hex>``, where the signature
is HMAC-SHA256 of ``"{key}\\n{expires}"`` under the store's signing key. ``objectstore.server``
serves such URLs (the gateway mounts it at ``/v1/objects``) after ``verify`` says yes.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from hybridinfer.errors import NotFound
from hybridinfer.objectstore.base import ObjectStore, check_key


class FilesystemStore(ObjectStore):
    """Files under ``root``; writes go to a temporary file renamed into place (atomic)."""

    def __init__(self, root: Path, signing_key: bytes, base_url: str) -> None:
        self.root = root
        self._signing_key = signing_key
        self.base_url = base_url.rstrip("/")

    def path(self, key: str) -> Path:
        """The file behind ``key``."""
        return self.root / check_key(key)

    async def put(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self._write, self.path(key), data)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    async def get(self, key: str) -> bytes:
        path = self.path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except (FileNotFoundError, IsADirectoryError):
            raise NotFound(f"no object {key!r}") from None

    async def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    async def list(self, prefix: str = "") -> list[str]:
        def walk() -> list[str]:
            if not self.root.is_dir():
                return []
            keys = (
                path.relative_to(self.root).as_posix()
                for path in self.root.rglob("*")
                if path.is_file() and not path.name.startswith(".tmp-")
            )
            return sorted(key for key in keys if key.startswith(prefix))

        return await asyncio.to_thread(walk)

    async def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def signature(self, key: str, expires: int) -> str:
        """HMAC-SHA256 of the key and expiry time, hex."""
        message = f"{key}\n{expires}".encode()
        return hmac.new(self._signing_key, message, hashlib.sha256).hexdigest()

    def verify(self, key: str, expires: str, signature: str) -> bool:
        """Whether a signed URL's parts are genuine and not expired."""
        if not (expires.isascii() and expires.isdigit()) or int(expires) < time.time():
            return False
        return hmac.compare_digest(self.signature(key, int(expires)), signature)

    async def signed_url(self, key: str, expires_s: int) -> str:
        check_key(key)
        expires = int(time.time()) + expires_s
        signature = self.signature(key, expires)
        return f"{self.base_url}/{quote(key)}?expires={expires}&signature={signature}"
