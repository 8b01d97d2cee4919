"""Request headers read from the scope: the first of a repeated header, None when absent."""

from __future__ import annotations

from starlette.types import Scope

from hybridinfer.server.responses import request_header


def scope_with(*headers: tuple[bytes, bytes]) -> Scope:
    return {"type": "http", "headers": list(headers)}


def test_a_header_is_read_and_a_missing_one_is_none() -> None:
    scope = scope_with((b"authorization", b"Bearer k"), (b"x-request-id", b"r-1"))
    assert request_header(scope, b"x-request-id") == "r-1"
    assert request_header(scope, b"authorization") == "Bearer k"
    assert request_header(scope, b"traceparent") is None


def test_a_repeated_header_reads_as_its_first_value_as_starlette_reads_it() -> None:
    scope = scope_with((b"authorization", b"Bearer first"), (b"authorization", b"Bearer second"))
    assert request_header(scope, b"authorization") == "Bearer first"
    assert request_header(scope, b"authorization") == "Bearer first"  # from the kept dict


def test_values_are_latin_1_as_the_wire_carries_them() -> None:
    assert request_header(scope_with((b"x-name", "café".encode("latin-1"))), b"x-name") == "café"
