"""The rule parser, fuzzed: whatever the document, a rule table or a ConfigError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from hybridinfer.decompose.rules import default_rules_path, parse_rules
from hybridinfer.errors import ConfigError
from tests.documentfuzz import documents

DEFAULT = default_rules_path().read_text(encoding="utf-8")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(DEFAULT))
def test_any_rule_document_parses_or_is_a_config_error(text: str) -> None:
    """Only our validation error may escape, and it must say what is wrong."""
    try:
        result = parse_rules(text)
    except ConfigError as error:
        problem = error.message
    else:
        problem = "valid"
        assert result.tasks
    assert problem
