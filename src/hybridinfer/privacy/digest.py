"""A text's 16-byte BLAKE2b digest: how a reading of a text (its names, or that it holds no
personal value) is remembered without keeping the text."""

from __future__ import annotations

import hashlib


def text_digest(text: str) -> bytes:
    """16 bytes for ``text`` (lone surrogates included, as a request's JSON may carry them)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
