"""The policy's ``answers`` block: defaults a careful caller expects, and what is refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hybridinfer.policy.answers import AnswersPolicy, CapabilityReuse
from hybridinfer.policy.document import compile_policy, default_policy_path


def test_defaults_reuse_deterministic_answers_exactly_and_nothing_semantically() -> None:
    policy = AnswersPolicy()
    assert policy.reuse("text-classification") == CapabilityReuse(ttl_s=86400.0)
    assert all(c.mode == "exact" for c in policy.capabilities.values())
    assert policy.reuse("redact") is None
    assert AnswersPolicy(enabled=False).reuse("text-classification") is None
    assert AnswersPolicy(capabilities={"chat": CapabilityReuse(mode="off")}).reuse("chat") is None


def test_semantic_reuse_is_refused_for_a_capability_without_a_text_prompt() -> None:
    with pytest.raises(ValidationError, match="semantic"):
        AnswersPolicy(capabilities={"image-classification": CapabilityReuse(mode="semantic")})
    with pytest.raises(ValidationError):
        CapabilityReuse(threshold=1.5)


def test_the_block_reads_from_policy_yaml() -> None:
    text = (
        default_policy_path().read_text()
        + "\nanswers:\n  capabilities:\n    chat: {mode: semantic, threshold: 0.9}\n"
    )
    compiled = compile_policy(text)
    assert compiled.policy.answers.reuse("chat") == CapabilityReuse(mode="semantic", threshold=0.9)
