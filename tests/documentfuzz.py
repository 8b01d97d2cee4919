"""Hypothesis strategies for YAML documents an operator (or an attacker) might send: random
text, random YAML structures, and the bundled document with lines deleted, duplicated or
overwritten."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import strategies as st

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
CEL_WORDS = ["subtask", "node", "network", "budget", "request", "privacy", "cloud", "rtt_ms"]
CEL_TOKENS = ["==", "&&", "||", "in", "has(", "0", "1.5", "'sensitive'", "true", "null", "\\"]
CEL_ALPHABET = st.sampled_from([*"()[]{}.,:?!<>=&|+-*/%\"' \n", *CEL_WORDS, *CEL_TOKENS])


def yaml_structures() -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=12) | st.integers(), children, max_size=5)
        ),
        max_leaves=25,
    )


def cel_expressions() -> st.SearchStrategy[str]:
    return st.lists(CEL_ALPHABET, max_size=20).map("".join)


@st.composite
def mutated(draw: st.DrawFn, original: str) -> str:
    """``original`` with a few lines deleted, duplicated, or with their value replaced."""
    lines = original.splitlines()
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        if not lines:
            break
        index = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        action = draw(st.sampled_from(["delete", "duplicate", "value", "cel", "text"]))
        line = lines[index]
        key, colon, _ = line.partition(":")
        if action == "delete":
            del lines[index]
        elif action == "duplicate":
            lines.insert(index, line)
        elif action == "value" and colon:
            scalar = yaml.safe_dump(draw(yaml_structures()), default_flow_style=True).strip()
            lines[index] = f"{key}: {scalar}"
        elif action == "cel" and colon:
            lines[index] = f"{key}: {yaml.safe_dump(draw(cel_expressions())).strip()}"
        else:
            lines[index] = draw(st.text(max_size=40))
    return "\n".join(lines)


def documents(original: str) -> st.SearchStrategy[str]:
    """Anything from noise to near-valid variations of ``original``."""
    return st.one_of(
        st.text(max_size=200),
        yaml_structures().map(lambda data: yaml.safe_dump(data, allow_unicode=True)),
        mutated(original),
    )
