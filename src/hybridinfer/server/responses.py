"""JSON responses (orjson) and the one error envelope every error is rendered in."""

from __future__ import annotations

import os
import re
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from hybridinfer.errors import (
    HybridInferError,
    InvalidJSON,
    PayloadTooLarge,
    SchemaViolation,
)
from hybridinfer.privacy.scrub import scrub

Body = TypeVar("Body", bound=BaseModel)
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
_HEADERS = "hybridinfer.headers"
"""Where a request's scope keeps its headers as a dict once one has been looked up."""


def request_header(scope: Scope, name: bytes) -> str | None:
    """The value of the request header ``name`` (lower case), the first one if it came twice.

    The headers become a dict on the first lookup and stay in the scope: a request looks up
    half a dozen (id, key, trace context, length, cache control, routing key), and Starlette's
    ``Headers`` walks the whole list in Python for each."""
    headers = scope.get(_HEADERS)
    if headers is None:
        headers = scope[_HEADERS] = dict(reversed(scope["headers"]))  # the first one wins
    value = headers.get(name)
    return None if value is None else str(value.decode("latin-1"))


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def error_response(error: HybridInferError, request_id: str) -> JSON:
    """``{"error": {"code", "message", "request_id"}}`` with the error's status and headers."""
    body: dict[str, Any] = {
        "code": error.error_code,
        "message": error.message,
        "request_id": request_id,
    }
    if error.details:
        body["details"] = error.details
    return JSON({"error": body}, status_code=error.status_code, headers=error.headers())


def valid_request_id(value: str | None) -> bool:
    return value is not None and _REQUEST_ID.match(value) is not None


def new_request_id() -> str:
    """32 random hex digits from the system's secure source, as ``uuid4().hex`` gives but for
    its version digit: a tenth of the cost (0.7 against 6.9 µs; the UUID object was the rest)."""
    return os.urandom(16).hex()


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body; 413 as soon as it grows past ``max_bytes``."""
    declared = request_header(request.scope, b"content-length")
    if (
        declared is not None
        and declared.isascii()
        and declared.isdigit()
        and int(declared) > max_bytes
    ):
        raise PayloadTooLarge(f"body is larger than {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"body is larger than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def decode_utf8(raw: bytes) -> str:
    """``raw`` as text; 400 ``invalid_encoding`` saying which byte is not UTF-8, and where."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start : exc.start + 1].hex()
        raise InvalidJSON(
            f"body is not valid UTF-8: byte 0x{byte} at offset {exc.start} ({exc.reason})",
            code="invalid_encoding",
        ) from None


async def read_text(request: Request, max_bytes: int) -> str:
    """The body as UTF-8 text; 400 if it is not."""
    return decode_utf8(await read_body(request, max_bytes))


async def read_json(request: Request, max_bytes: int) -> dict[str, Any]:
    """The body as a JSON object: 413 past ``max_bytes``, 400 if not UTF-8 or not JSON, 422 if
    not an object."""
    raw = await read_body(request, max_bytes)
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        decode_utf8(raw)  # orjson words bad UTF-8 as "surrogates not allowed": say what it is
        raise InvalidJSON(f"body is not valid JSON: {exc.msg}") from None
    if not isinstance(body, dict):
        raise SchemaViolation("body must be a JSON object")
    return body


def parse_body(model: type[Body], body: dict[str, Any]) -> Body:
    """Validate a body; a SchemaViolation lists each field and what is wrong with it."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        problems = [
            {  # a key the caller chose may be personal data: scrubbed like any stored text
                "field": scrub(".".join(str(part) for part in error["loc"])),
                "problem": scrub(error["msg"]),
            }
            for error in exc.errors(include_url=False, include_input=False)
        ]
        summary = "; ".join(f"{p['field']}: {p['problem']}" for p in problems[:5])
        raise SchemaViolation(f"invalid request: {summary}", details={"errors": problems}) from None


async def read_yaml_document(request: Request, max_bytes: int, field: str) -> str:
    """A YAML document sent as ``application/yaml``, or as ``{"<field>": "<yaml text>"}``."""
    if "yaml" in request.headers.get("content-type", ""):
        return await read_text(request, max_bytes)
    given = (await read_json(request, max_bytes)).get(field)
    if not isinstance(given, str):
        raise SchemaViolation(f'send the {field} as YAML, or as {{"{field}": "<yaml text>"}}')
    return given
