"""Which prompts a router was trained on, kept in its card without the prompts themselves.

Scoring a router on its own training prompts flatters it: on RouteLLM's MMLU files the bundled
router has seen every question. The card keeps a 4-byte BLAKE2b digest of each training
prompt, whitespace-normalised (``outcomes.normalise_prompt``), sorted and base64-encoded:
~75 kB for 14,037 prompts. A prompt the router never saw matches one by chance with
probability ~n / 2^32 (3 in a million for that set), so a count of matches says how much of
an evaluation file is in-sample. Nothing of a prompt can be read back from its digest."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.errors import InvalidInput
from hybridinfer.routertraining.outcomes import normalise_prompt

SCHEME = "blake2b-32 of the whitespace-normalised prompt, sorted, base64"
_SIZE = 4
"""Bytes per digest: read as big-endian 32-bit numbers, whose order is the bytes' order."""


def _digest(prompt: str) -> bytes:
    data = normalise_prompt(prompt).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=_SIZE).digest()


def prompt_fingerprint(prompts: Iterable[str]) -> dict[str, Any]:
    """The card entry for a router trained on ``prompts``."""
    digests = sorted({_digest(prompt) for prompt in prompts})
    return {
        "scheme": SCHEME,
        "count": len(digests),
        "digests": base64.b64encode(b"".join(digests)).decode("ascii"),
    }


def seen_in_training(fingerprint: Mapping[str, Any], prompts: list[str]) -> npt.NDArray[np.bool_]:
    """Per prompt, whether the fingerprinted training set held it (up to digest collisions)."""
    if fingerprint.get("scheme") != SCHEME:
        raise InvalidInput(f"unknown training-prompt fingerprint {fingerprint.get('scheme')!r}")
    known = np.frombuffer(base64.b64decode(fingerprint["digests"]), dtype=">u4")
    asked = np.frombuffer(b"".join(_digest(prompt) for prompt in prompts), dtype=">u4")
    at = np.searchsorted(known, asked)
    found = np.zeros(len(prompts), dtype=bool)
    inside = at < len(known)
    found[inside] = known[at[inside]] == asked[inside]
    return found
