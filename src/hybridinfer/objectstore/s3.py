"""Objects in an S3 bucket (AWS or any S3-compatible server), with presigned GET URLs.

boto3 is synchronous: every call runs on a worker thread. botocore's errors are mapped into
ours here: a missing key is ``NotFound``; anything else from the server is ``UpstreamError``,
and an unreachable endpoint ``UpstreamUnavailable``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from hybridinfer.errors import NotFound, UpstreamError, UpstreamUnavailable
from hybridinfer.objectstore.base import ObjectStore, check_key

T = TypeVar("T")


class S3Store(ObjectStore):
    """Keys under ``prefix`` in ``bucket``; ``endpoint_url`` selects an S3-compatible server."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        client: Any = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._client = client or boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region,
            config=Config(signature_version="s3v4", retries={"max_attempts": 3}),
        )

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    async def _call(self, what: str, call: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(call)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("NoSuchKey", "404", "NotFound"):
                raise NotFound(f"no object {what!r}") from None
            raise UpstreamError(f"object store refused {what!r}: {code or exc}") from None
        except EndpointConnectionError as exc:
            raise UpstreamUnavailable(f"object store unreachable: {exc}") from None
        except BotoCoreError as exc:
            raise UpstreamError(f"object store failed on {what!r}: {exc}") from None

    async def put(self, key: str, data: bytes) -> None:
        name = self._key(key)
        await self._call(
            key, lambda: self._client.put_object(Bucket=self.bucket, Key=name, Body=data)
        )

    async def get(self, key: str) -> bytes:
        name = self._key(key)

        def read() -> bytes:
            body = self._client.get_object(Bucket=self.bucket, Key=name)["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()

        return await self._call(key, read)

    async def exists(self, key: str) -> bool:
        name = self._key(key)
        try:
            await self._call(key, lambda: self._client.head_object(Bucket=self.bucket, Key=name))
        except NotFound:
            return False
        return True

    async def list(self, prefix: str = "") -> list[str]:
        def walk() -> list[str]:
            keys: list[str] = []
            paginator = self._client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
                keys.extend(item["Key"][len(self.prefix) :] for item in page.get("Contents", []))
            return sorted(keys)

        return await self._call(prefix or "/", walk)

    async def delete(self, key: str) -> None:
        name = self._key(key)
        await self._call(key, lambda: self._client.delete_object(Bucket=self.bucket, Key=name))

    async def signed_url(self, key: str, expires_s: int) -> str:
        name = self._key(key)
        url: str = await self._call(
            key,
            lambda: self._client.generate_presigned_url(
                "get_object", Params={"Bucket": self.bucket, "Key": name}, ExpiresIn=expires_s
            ),
        )
        return url
