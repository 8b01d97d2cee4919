"""Privacy labels of a plan's subtasks, from what each one will see.

Every string a request carries is scanned — at any depth, dictionary keys too, so a chat
message's ``name``, a content part, a tool call's arguments and a tool's result are read like
its ``content``. A subtask that reads raw personal data (a request input that holds some, any
input when the caller declares the request ``sensitive``, or an output of a subtask that read
such data) is ``sensitive`` and stays in the private zone. A subtask that reads only outputs a
step declares clean (``clean_outputs``: a redactor's pseudonymised texts) may leave it: it is
labelled at most ``internal``.

Fail closed: when a detector raises, the input it was reading counts as personal data.
Names need a model (~7 ms a text), so the pattern scan runs at decompose and ``NameCheck``
runs only for the inputs of subtasks the router could place in the public zone.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from hybridinfer.core.plan import Plan, Privacy
from hybridinfer.decompose.rules import TaskRule, split_reference
from hybridinfer.policy.privacymodes import PrivacyModes
from hybridinfer.privacy.detect import Detector, default_detector, standard_recognisers

JSON_DEPTH = 4
"""How deep JSON inside JSON strings is read (each level is a string holding JSON)."""
_JSON_START = re.compile(r"\s*[\[{]")
"""A string that may hold JSON: its first character past any white space opens an object or a
list (matched in place, without a stripped copy of a long message)."""


@functools.lru_cache(maxsize=32)
def detector_for(phone_regions: tuple[str, ...]) -> Detector:
    """The detector of a policy's phone regions (built once per set of regions)."""
    return Detector(standard_recognisers(phone_regions))


def strings_in(value: Any) -> list[str]:
    """Every string in ``value``: itself, list items and dictionary keys and values, at any
    depth; whole numbers as their digits (a phone number sent as a JSON number); and the
    strings of JSON held in a string (a tool call's arguments, a tool's result), read again
    as JSON, up to ``JSON_DEPTH`` deep. A field added to a request schema later is scanned
    without a change here. Gathered into one list by plain recursion: a generator at every
    level of a chat's messages cost more than reading them."""
    found: list[str] = []
    _gather(value, 0, found)
    return found


def _gather(value: Any, depth: int, found: list[str]) -> None:
    if isinstance(value, str):
        found.append(value)
        if depth < JSON_DEPTH and _JSON_START.match(value) is not None:
            _gather(_json_in(value), depth + 1, found)
    elif isinstance(value, int) and not isinstance(value, bool):
        found.append(str(value))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                found.append(key)
            _gather(item, depth, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _gather(item, depth, found)


def _json_in(text: str) -> Any:
    """The JSON ``text`` holds, or None when it is not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


@dataclass
class PrivacyScan:
    """What the scan of one request's inputs found; kinds and counts only, never values."""

    personal: set[str] = field(default_factory=set)
    """Request inputs holding personal data (every input of a request declared sensitive)."""
    kinds: Counter[str] = field(default_factory=Counter)
    failed: set[str] = field(default_factory=set)
    """Inputs a detector failed on: personal, by the fail-closed rule."""
    names_checked: set[str] = field(default_factory=set)
    """Inputs the name finder has read (found or not)."""

    def describe(self) -> dict[str, Any]:
        return {
            "inputs_with_personal_data": sorted(self.personal),
            "kinds": dict(self.kinds),
            "detector_failed": sorted(self.failed),
            "names_checked": sorted(self.names_checked),
        }


def scan_inputs(
    inputs: Mapping[str, Any],
    requested: Privacy,
    detector: Detector | None = None,
    fail_closed: bool = True,
) -> PrivacyScan:
    """The pattern scan of every string of every input. A detector that raises marks the
    input personal (``fail_closed``) or leaves it as it is (recorded in ``failed`` either way)."""
    detector = detector or default_detector()
    scan = PrivacyScan()
    for name, value in inputs.items():
        if requested is Privacy.SENSITIVE:
            scan.personal.add(name)
            continue
        try:
            found = [finding for text in strings_in(value) for finding in detector.detect(text)]
        except Exception:  # fail closed: whatever broke, the input stays private
            scan.failed.add(name)
            if fail_closed:
                scan.personal.add(name)
            continue
        if found:
            scan.personal.add(name)
            scan.kinds.update(finding.kind for finding in found)
    return scan


def exposures(rule: TaskRule) -> dict[str, frozenset[str]]:
    """Step id → the request inputs whose raw values the step sees, directly or through an
    earlier step's output that the earlier step does not declare clean."""
    seen: dict[str, frozenset[str]] = {}
    for step in rule.subtasks:
        raw: set[str] = set()
        for reference in step.inputs.values():
            source, name = split_reference(reference)
            if source == "inputs":
                raw.add(name)
            elif source in seen and name not in rule.step(source).clean_outputs:
                raw |= seen[source]
        seen[step.id] = frozenset(raw)
    return seen


def label_privacy(
    rule: TaskRule,
    exposed: Mapping[str, frozenset[str]],
    scan: PrivacyScan,
    requested: Privacy,
) -> dict[str, Privacy]:
    """Subtask id → privacy label; ``exposed`` is ``exposures(rule)``, which the caller works
    out once per rule table (a table is read far more often than it changes)."""
    ceiling = Privacy.INTERNAL if requested is Privacy.SENSITIVE else requested
    labels: dict[str, Privacy] = {}
    for step_id, raw in exposed.items():
        if raw & scan.personal:
            labels[step_id] = Privacy.SENSITIVE
        else:
            labels[step_id] = ceiling.at_least(rule.step(step_id).privacy or Privacy.PUBLIC)
    return labels


def apply_privacy_modes(plan: Plan, modes: PrivacyModes, requested: Privacy | None) -> None:
    """Give each subtask its capability's privacy mode; a request the caller declared
    ``sensitive`` keeps every subtask ``private`` (the caller's word is the stricter one)."""
    if requested is Privacy.SENSITIVE:
        return
    for subtask in plan.subtasks:
        if not subtask.stays_local:
            subtask.privacy_mode = modes.mode(subtask.capability)
