"""Privacy labels of a plan's subtasks, from what each one will see.

A subtask that reads raw personal data — a request input where ``privacy.detect`` finds some
(or any input, when the caller declares the request ``sensitive``), or an output of a subtask
that read such data — is ``sensitive`` and stays in the private zone. A subtask that reads
only outputs a step declares clean (``clean_outputs``: a redactor's pseudonymised texts) may
leave it: it is labelled at most ``internal``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hybridinfer.core.plan import Privacy
from hybridinfer.decompose.rules import TaskRule, split_reference
from hybridinfer.privacy.detect import detect


def holds_personal_data(value: Any) -> bool:
    """Whether a request input (text, list of texts, chat messages) holds personal data."""
    if isinstance(value, str):
        return bool(detect(value))
    if isinstance(value, list):
        return any(holds_personal_data(item) for item in value)
    if isinstance(value, dict):
        return holds_personal_data(value.get("content"))
    return False


def label_privacy(
    rule: TaskRule, inputs: Mapping[str, Any], requested: Privacy
) -> dict[str, Privacy]:
    """Subtask id → privacy label."""
    raw_inputs = {
        name
        for name, value in inputs.items()
        if requested is Privacy.SENSITIVE or holds_personal_data(value)
    }
    clean: dict[str, set[str]] = {}
    """Steps that saw raw data → the outputs they declare clean."""
    ceiling = Privacy.INTERNAL if requested is Privacy.SENSITIVE else requested
    labels: dict[str, Privacy] = {}
    for step in rule.subtasks:
        sees_raw = False
        for reference in step.inputs.values():
            source, field = split_reference(reference)
            if source == "inputs":
                sees_raw = sees_raw or field in raw_inputs
            elif source in clean and field not in clean[source]:
                sees_raw = True
        if sees_raw:
            labels[step.id] = Privacy.SENSITIVE
            clean[step.id] = set(step.clean_outputs)
        else:
            labels[step.id] = ceiling.at_least(step.privacy or Privacy.PUBLIC)
    return labels
