"""How the answer choices of a multiple-choice prompt relate to the question and to each other.

Topic-free, like the question-form features: the question stem and each lettered choice are
embedded once (MiniLM, one batch per prompt) and only their cosine similarities are kept. Choices
that are close to one another ask for a fine distinction, which the weak model misses more
often (on RouteLLM's MMLU outcomes the mean similarity between choices correlates -0.26 with the
weak model being right and +0.10 with the strong model's gain over it); a choice that stands
out against the stem is the opposite. A prompt without lettered choices gets zeros and costs
nothing: no model runs.

``stem_of`` gives the prompt with its choices removed: the form a chat question takes, which
training adds beside each multiple-choice prompt (``routertraining/training.py``) so that a
router's weights do not lean on a format that another domain lacks.
"""

from __future__ import annotations

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
STEM_WORDS = 32
"""The stem's first words are embedded (as the live scorer embeds a prompt's first words: a
200-word passage costs MiniLM ~65 ms on two cores, its first 32 words a few)."""
MAX_CHOICES = 10
_TEMPERATURE = 0.05
"""Softmax temperature over the stem-choice similarities for the entropy: cosine similarities
of MiniLM sentences differ by a few hundredths."""

FloatMatrix = npt.NDArray[np.float64]


def stem_of(prompt: str) -> str:
    """``prompt`` without its lettered answer choices (unchanged when it has none)."""
    stem, choices = split_choices(prompt)
    return stem.strip() if choices else prompt


def _texts(prompt: str) -> list[str]:
    """The stem's first words, then each choice, when the prompt has two or more choices."""
    stem, choices = split_choices(prompt)
    if not choices:
        return []
    first = " ".join(stem.split()[:STEM_WORDS])
    return [first, *(choice.strip() or "-" for choice in choices[:MAX_CHOICES])]


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
