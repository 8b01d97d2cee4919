from __future__ import annotations

import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.policy.document import compile_policy


def test_modes_default_to_private() -> None:
    modes = compile_policy("version: v1\n").policy.privacy_modes
    assert (modes.mode("chat"), modes.on_failure) == ("private", "error")


def test_a_capability_can_pseudonymise() -> None:
    text = (
        "version: v1\nprivacy_modes:\n  capabilities: {chat: pseudonymise}\n  on_failure: local\n"
    )
    modes = compile_policy(text).policy.privacy_modes
    assert (modes.mode("chat"), modes.mode("embedding"), modes.on_failure) == (
        "pseudonymise",
        "private",
        "local",
    )


@pytest.mark.parametrize(
    "block", ["capabilities: {chat: redact}", "on_failure: ignore", "mode: pseudonymise"]
)
def test_unknown_modes_are_refused(block: str) -> None:
    with pytest.raises(ConfigError):
        compile_policy(f"version: v1\nprivacy_modes:\n  {block}\n")
