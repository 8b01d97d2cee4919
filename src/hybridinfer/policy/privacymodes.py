"""Privacy modes per capability: what personal data in a subtask means for where it may run.

- ``private`` (the default): a subtask holding personal data stays in the private zone.
- ``pseudonymise``: it may run in the public zone, but only after every personal value in
  every field was replaced locally by a placeholder (``privacy/conversation.py``); the values
  are put back in the answer, streamed answers too. Detection or restoring that fails makes
  the subtask fail closed, as ``on_failure`` says.

A request the caller declares ``sensitive`` stays private whatever the mode.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["private", "pseudonymise"]


class PrivacyModes(BaseModel):
    """The ``privacy_modes`` block of a policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    capabilities: dict[str, Mode] = Field(
        default_factory=dict,
        description="capability (chat, summarization, ...) → mode; unlisted ones are private",
    )
    on_failure: Literal["error", "local"] = Field(
        "error",
        description="detection or restoring failed: end the subtask with 503 "
        "pseudonymisation_failed (error, the default; no later call of it runs anywhere) or "
        "let only private-zone deployments answer it (local)",
    )

    def mode(self, capability: str) -> Mode:
        """The mode of ``capability``."""
        return self.capabilities.get(capability, "private")
