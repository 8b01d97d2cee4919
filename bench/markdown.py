"""Markdown pieces of the benchmark document: verdicts, durations, tables."""

from __future__ import annotations

from typing import Any

Lines = list[str]
"""Lines of the document."""


def verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"


def table(header: list[str], rows: list[list[Any]]) -> Lines:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]
