"""Features of a prompt's form rather than its topic: what kind of question, not about what.

A router trained on MMLU's embeddings learns which *subjects* a weak model misses; those do not
carry to another domain. These features describe the question itself — numbers and operators,
reasoning and negation words, answer-format cues (statements to judge, roman-numeral combinations,
"all of the above"), the length and kind of the answer choices — and are computed from the text
with a few regular expressions (tens of microseconds for a 200-word prompt). A prompt without
lettered choices (a chat message) gets zeros for the choice features.
"""

from __future__ import annotations

import math
import re

import numpy as np
import numpy.typing as npt

STRUCTURE_FEATURES = (
    "log_numbers",
    "log_operators",
    "log_reasoning_words",
    "log_negations",
    "log_question_marks",
    "log_sentences",
    "log_capitalised_words",
    "log_years",
    "has_passage",
    "has_blank",
    "has_statements",
    "has_combinations",
    "has_all_or_none",
    "has_code",
    "choices",
    "numeric_choice_share",
    "log_choice_words",
    "choice_length_spread",
    "log_stem_to_choices",
    "asks_which_following",
    "asks_compute",
)

_CHOICE = re.compile(r"^\s*\(?([A-J])[.)]\s*(.*)$")
_NUMBER = re.compile(r"(?<![A-Za-z])[-+]?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?")
_OPERATOR = re.compile(
    "[=+*/^<>\u2264\u2265\u00d7\u00f7\u221a\u2211\u222b\u00b1]|"
    r"\*\*|\bmod\b|\blog\b|\bsin\b|\bcos\b"
)
_REASONING = re.compile(
    r"\b(?:calculate|compute|determine|estimate|solve|derive|prove|find|how many|how much|"
    r"suppose|assume|assuming|given|if|then|therefore|thus|hence|implies|probability|"
    r"expected|rate|ratio|maximum|minimum|let)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|except|false|incorrect|least|cannot|can't|isn't|doesn't|without)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b")
_CAPITALISED = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
_STATEMENTS = re.compile(r"\b(?:statement|scenario)\s*\d\s*\|", re.IGNORECASE)
_COMBINATIONS = re.compile(r"\b(?:I{1,3}|IV)\s*(?:,|and|only)\b|\bI, II\b")
_ALL_OR_NONE = re.compile(r"\b(?:all|none|both|neither) of the (?:above|following)\b", re.I)
_CODE = re.compile(r"(?:\bdef |\breturn\b|;\s*$|\{|\}|==|\bprint\(|\bint\b|\bwhile\b)", re.M)
_PASSAGE = re.compile(r"refers to the following|following (?:passage|excerpt|information)", re.I)
_QUESTION_MARK = re.compile(r"\?")
_WHICH = re.compile(r"\bwhich of the following\b", re.IGNORECASE)
_COMPUTE = re.compile(
    r"\b(?:what is the (?:value|number|probability|sum)|how many|calculate|"
    r"compute|find the)\b",
    re.IGNORECASE,
)


def split_choices(prompt: str) -> tuple[str, list[str]]:
    """The question stem and the lettered answer choices (``A. ...`` lines), if any."""
    lines = prompt.splitlines()
    choices: list[str] = []
    stem_lines: list[str] = []
    for line in lines:
        match = _CHOICE.match(line)
        if match is not None and (choices or len(stem_lines) > 0):
            choices.append(match.group(2))
        elif not choices:
            stem_lines.append(line)
    stem = "\n".join(stem_lines)
    return stem, choices if len(choices) >= 2 else []


def _log_count(pattern: re.Pattern[str], text: str) -> float:
    return math.log1p(len(pattern.findall(text)))


def describe(prompt: str) -> list[float]:
    """The ``STRUCTURE_FEATURES`` of one prompt, in that order."""
    stem, choices = split_choices(prompt)
    choice_words = [len(choice.split()) for choice in choices]
    numeric = [bool(_NUMBER.search(choice)) for choice in choices]
    mean_words = float(np.mean(choice_words)) if choices else 0.0
    spread = float(np.std(choice_words)) / (1.0 + mean_words) if choices else 0.0
    stem_words = len(stem.split())
    return [
        _log_count(_NUMBER, prompt),
        _log_count(_OPERATOR, prompt),
        _log_count(_REASONING, stem),
        _log_count(_NEGATION, stem),
        _log_count(_QUESTION_MARK, stem),
        _log_count(_SENTENCE_END, stem),
        _log_count(_CAPITALISED, stem),
        _log_count(_YEAR, prompt),
        float(stem_words > 120 or bool(_PASSAGE.search(stem))),
        float("___" in prompt or "_____" in prompt),
        float(bool(_STATEMENTS.search(prompt))),
        float(bool(_COMBINATIONS.search(" ".join(choices)))),
        float(bool(_ALL_OR_NONE.search(prompt))),
        float(bool(_CODE.search(prompt))),
        float(len(choices)),
        float(np.mean(numeric)) if choices else 0.0,
        math.log1p(mean_words),
        spread,
        math.log1p(stem_words) - math.log1p(sum(choice_words)),
        float(bool(_WHICH.search(stem))),
        float(bool(_COMPUTE.search(stem))),
    ]


def structure_features(prompts: list[str]) -> npt.NDArray[np.float64]:
    """One row of ``STRUCTURE_FEATURES`` per prompt."""
    rows = [describe(prompt) for prompt in prompts]
    return np.asarray(rows, dtype=np.float64).reshape(len(prompts), len(STRUCTURE_FEATURES))
