"""How the answer choices of a multiple-choice prompt relate to the question and to each other.

Topic-free, like the question-form features: the question stem and each lettered choice (their
first 16 words) become unit vectors and only their cosine similarities are kept. Two readings of
the same seven similarities, two feature sets of ``route/learned.py``:

- ``choicetext``: vectors of each text's character trigram counts (hashed into
  ``TRIGRAM_BUCKETS``; ~0.2 ms a prompt, no model). The shipped router reads these.
- ``choices``: MiniLM sentence embeddings (a model run per text: 8-14 ms for a prompt with four
  choices on two cores, over the live router's 10 ms budget, so only the benchmark scores them).

Choices close to one another ask for a fine distinction, which the weak model misses more often:
on RouteLLM's MMLU outcomes the mean similarity between choices correlates -0.26 (MiniLM) and
-0.19 (trigrams) with the weak model being right. A choice that stands out against the stem is
the opposite. A prompt without lettered choices gets zeros and runs no model.

``stem_of`` gives the prompt with its choices removed: the form a chat question takes, which
training adds beside each multiple-choice prompt (``routertraining/training.py``) so that a
router's weights do not lean on a format that another domain lacks.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from hybridinfer.route.promptstructure import split_choices

CHOICE_FEATURES = (
    "stem_choice_max",
    "stem_choice_gap",
    "stem_choice_spread",
    "stem_choice_entropy",
    "choice_similarity_mean",
    "choice_similarity_min",
    "choice_similarity_max",
)
STEM_WORDS = 16
CHOICE_WORDS = 16
"""Only the stem's and each choice's first words are read: 16 scored as well as 32 words and
whole choices on the MMLU folds, and with MiniLM (one run per text, ~1.5 ms for a short one on
two cores) they cut the longest choices' share of the time."""
MAX_CHOICES = 10
TRIGRAM_BUCKETS = 4096
_TEMPERATURE = 0.05
"""Softmax temperature over the stem-choice similarities for the entropy: the similarities of
one prompt's choices often differ by a few hundredths."""

FloatMatrix = npt.NDArray[np.float64]


def reading() -> dict[str, int]:
    """How the texts are cut, as an artifact records it: a router trained on other cuts reads
    other similarities."""
    return {
        "stem_words": STEM_WORDS,
        "choice_words": CHOICE_WORDS,
        "max_choices": MAX_CHOICES,
        "trigram_buckets": TRIGRAM_BUCKETS,
    }


def trigram_vectors(texts: list[str]) -> FloatMatrix:
    """Unit vectors of each text's character trigram counts (lower case, spaces folded, one
    space at each end), hashed with CRC-32 into ``TRIGRAM_BUCKETS``; zeros for an empty text."""
    vectors = np.zeros((len(texts), TRIGRAM_BUCKETS), dtype=np.float64)
    for row, text in enumerate(texts):
        folded = f" {' '.join(text.lower().split())} ".encode()
        buckets = [
            zlib.crc32(folded[start : start + 3]) % TRIGRAM_BUCKETS
            for start in range(len(folded) - 2)
        ]
        vectors[row] = np.bincount(buckets, minlength=TRIGRAM_BUCKETS)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: FloatMatrix = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return unit


def stem_of(prompt: str) -> str:
    """``prompt`` without its lettered answer choices (unchanged when it has none)."""
    stem, choices = split_choices(prompt)
    return stem.strip() if choices else prompt


def _texts(prompt: str) -> list[str]:
    """The stem's first words, then each choice's, when the prompt has two or more choices."""
    stem, choices = split_choices(prompt)
    if not choices:
        return []
    first = " ".join(stem.split()[:STEM_WORDS])
    return [
        first,
        *(" ".join(choice.split()[:CHOICE_WORDS]) or "-" for choice in choices[:MAX_CHOICES]),
    ]


def describe(vectors: FloatMatrix) -> list[float]:
    """The ``CHOICE_FEATURES`` of one prompt from unit vectors: the stem's, then each choice's."""
    stem, choices = vectors[0], vectors[1:]
    to_stem = choices @ stem
    ordered = np.sort(to_stem)[::-1]
    weights = np.exp((to_stem - ordered[0]) / _TEMPERATURE)
    weights /= weights.sum()
    entropy = float(-(weights * np.log(weights + 1e-12)).sum() / np.log(len(to_stem)))
    pairs = (choices @ choices.T)[np.triu_indices(len(choices), 1)]
    return [
        float(ordered[0]),
        float(ordered[0] - ordered[1]),
        float(to_stem.std()),
        entropy,
        float(pairs.mean()),
        float(pairs.min()),
        float(pairs.max()),
    ]


def choice_features(
    prompts: list[str], embed: Callable[[list[str]], npt.NDArray[np.floating]]
) -> FloatMatrix:
    """One row of ``CHOICE_FEATURES`` per prompt; ``embed`` (unit vectors, one per text) is
    called once, with every text of every prompt."""
    rows = np.zeros((len(prompts), len(CHOICE_FEATURES)), dtype=np.float64)
    spans: list[tuple[int, int, int]] = []
    texts: list[str] = []
    for index, prompt in enumerate(prompts):
        found = _texts(prompt)
        if found:
            spans.append((index, len(texts), len(texts) + len(found)))
            texts.extend(found)
    if not texts:
        return rows
    vectors = np.asarray(embed(texts), dtype=np.float64)
    for index, start, end in spans:
        rows[index] = describe(vectors[start:end])
    return rows
