"""The policy parser, fuzzed: whatever the document, a compiled policy or a ConfigError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from hybridinfer.errors import ConfigError
from hybridinfer.policy.document import compile_policy, default_policy_path
from tests.documentfuzz import documents

DEFAULT = default_policy_path().read_text(encoding="utf-8")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(DEFAULT))
def test_any_policy_document_compiles_or_is_a_config_error(text: str) -> None:
    """Only our validation error may escape, and it must say what is wrong."""
    try:
        result = compile_policy(text)
    except ConfigError as error:
        problem = error.message
    else:
        problem = "valid"
        assert result.version
    assert problem
