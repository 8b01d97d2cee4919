"""The learned router: from the prompt alone, how much better would the strong model do?

Features are computed locally: the MiniLM sentence embedding (``hybridinfer.models.embedder``), a
few text statistics (length, digits, symbols), the question's form
(``route/promptstructure.py``) and how its answer choices relate (``route/choices.py``). The
score is a sum of logistic "heads" over those features, e.g. ``P(strong correct) -
P(weak correct)``, the expected quality gain of sending the prompt to the strong model (an
ensemble averages several such pairs), and may add a linear head: the bundled MMLU router adds
a length prior on the prompt's log length (``routertraining/training.py``'s ``LengthPrior``).
Training and evaluation live in ``hybridinfer.routertraining``; this module only needs numpy,
so serving never imports sklearn or torch.

The artifact is one JSON file: feature names, the heads (standardisation folded into the
weights), the embedder it was trained with (name and sha256) and a card (training data,
selection, cross-validated metrics).
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from hybridinfer.errors import ConfigError
from hybridinfer.models.embedder import Embedder
from hybridinfer.route.choices import (
    CHOICE_FEATURES,
    choice_features,
    reading,
    stem_of,
    trigram_vectors,
)
from hybridinfer.route.promptstructure import STRUCTURE_FEATURES, structure_features

logger = logging.getLogger(__name__)

FORMAT = "hybridinfer-router/1"
FEATURE_SETS = ("embedding", "text", "structure", "choices", "choicetext")
CHOICE_SETS = ("choices", "choicetext")
TEXT_STATISTICS = (
    "log_chars",
    "log_words",
    "log_tokens",
    "digit_share",
    "symbol_share",
    "uppercase_share",
    "lines",
)
_SYMBOLS = frozenset("=+-*/^<>()[]{}|\\$%")

FloatMatrix = npt.NDArray[np.float64]


def text_statistics(prompts: list[str], token_counts: list[int]) -> FloatMatrix:
    """Cheap signals of difficulty: long, numeric or formula-heavy prompts trip weak models."""
    rows = []
    for prompt, tokens in zip(prompts, token_counts, strict=True):
        chars = max(len(prompt), 1)
        rows.append(
            [
                math.log1p(len(prompt)),
                math.log1p(len(prompt.split())),
                math.log1p(tokens),
                sum(character.isdigit() for character in prompt) / chars,
                sum(character in _SYMBOLS for character in prompt) / chars,
                sum(character.isupper() for character in prompt) / chars,
                math.log1p(prompt.count("\n")),
            ]
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(prompts), len(TEXT_STATISTICS))


@dataclass
class FeatureTable:
    """Every feature set of a list of prompts, computed once and combined on demand."""

    embedding: FloatMatrix
    text: FloatMatrix
    structure: FloatMatrix | None = None
    """The question-form features; ``None`` in tables built by hand without them."""
    choices: FloatMatrix | None = None
    """The answer-choice features read by MiniLM; ``None`` when not computed."""
    choicetext: FloatMatrix | None = None
    """The same features read from character trigrams (no model); ``None`` when not computed."""
    stems: FeatureTable | None = None
    """The same rows with their answer choices removed (``choices.stem_of``), when computed:
    what a recipe with ``stems`` also trains on, and what the format-shift protocol scores."""

    @classmethod
    def compute(
        cls,
        prompts: list[str],
        embedder: Embedder,
        cache_dir: Path | None = None,
        embed_words: int | None = None,
        embed: bool = True,
        structure: bool = True,
        choices: tuple[str, ...] = (),
        stems: bool = False,
    ) -> FeatureTable:
        """Embed and measure ``prompts``; embeddings are cached by content when asked.
        ``embed_words`` embeds only each prompt's first words (the statistics read it all);
        ``embed=False`` skips the embedding (a router without that feature set: no model run),
        ``structure=False`` the question-form features; ``choices`` names the answer-choice
        sets to add (``CHOICE_SETS``: read by MiniLM, or from trigrams), ``stems`` the same
        table of the prompts with their choices removed."""
        embedded = (
            prompts if embed_words is None else [first_words(p, embed_words) for p in prompts]
        )
        embedding = (
            embed_with_cache(embedder, embedded, cache_dir)
            if embed
            else np.zeros((len(prompts), 0), dtype=np.float64)
        )
        text = text_statistics(prompts, embedder.count_tokens(prompts))
        return cls(
            embedding=embedding,
            text=text,
            structure=structure_features(prompts) if structure else None,
            choices=(
                choice_features(prompts, lambda texts: embed_with_cache(embedder, texts, cache_dir))
                if "choices" in choices
                else None
            ),
            choicetext=(
                choice_features(prompts, trigram_vectors) if "choicetext" in choices else None
            ),
            stems=(
                cls.compute(
                    [stem_of(prompt) for prompt in prompts],
                    embedder,
                    cache_dir,
                    embed_words,
                    embed=embed,
                    structure=structure,
                    choices=choices,
                )
                if stems
                else None
            ),
        )

    def matrix(self, features: tuple[str, ...] | list[str]) -> FloatMatrix:
        """The named feature sets side by side, in the order given."""
        unknown = [name for name in features if name not in FEATURE_SETS]
        if unknown:
            raise ConfigError(f"unknown router feature set(s): {', '.join(unknown)}")
        for name in ("structure", *CHOICE_SETS):
            if name in features and getattr(self, name) is None:
                raise ConfigError(f"this feature table has no {name} features")
        if "embedding" in features and self.embedding.shape[1] == 0:
            raise ConfigError("this feature table was computed without the embedding")
        return np.hstack([getattr(self, name) for name in features])

    def rows(self, mask: npt.NDArray[np.bool_]) -> FeatureTable:
        """The table restricted to the rows where ``mask`` is true."""
        return FeatureTable(
            embedding=self.embedding[mask],
            text=self.text[mask],
            structure=None if self.structure is None else self.structure[mask],
            choices=None if self.choices is None else self.choices[mask],
            choicetext=None if self.choicetext is None else self.choicetext[mask],
            stems=None if self.stems is None else self.stems.rows(mask),
        )


def choice_sets(features: tuple[str, ...] | set[str]) -> tuple[str, ...]:
    """The answer-choice sets among ``features``: what a table for them must compute."""
    return tuple(name for name in CHOICE_SETS if name in features)


def first_words(text: str, count: int) -> str:
    """The first ``count`` words of ``text``, joined by single spaces."""
    return " ".join(text.split()[:count])


def embed_with_cache(embedder: Embedder, prompts: list[str], cache_dir: Path | None) -> FloatMatrix:
    """Embeddings of ``prompts``, reused from ``cache_dir`` when the same texts were embedded.

    Embedding all of MMLU takes minutes on two cores; every other step takes seconds.
    """
    if cache_dir is None:
        return embedder.embed(prompts).astype(np.float64)
    digest = hashlib.sha256(embedder.fingerprint.encode())
    for prompt in prompts:
        digest.update(prompt.encode())
        digest.update(b"\0")
    path = Path(cache_dir) / f"embeddings-{digest.hexdigest()[:20]}.npy"
    if path.is_file():
        cached: FloatMatrix = np.load(path).astype(np.float64)
        return cached
    embedding = embedder.embed(prompts)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, embedding)
    return embedding.astype(np.float64)


LINKS = ("logistic", "identity")


@dataclass(frozen=True)
class Head:
    """One model on the features; its value enters the score times ``sign``: a logistic
    model's probability, or (``link="identity"``) the linear term itself, as a length prior
    adds it (``routertraining/training.py``'s ``LengthPrior``)."""

    predicts: str
    sign: float
    weights: npt.NDArray[np.float64]
    bias: float
    link: str = "logistic"

    def probability(self, features: FloatMatrix) -> npt.NDArray[np.float64]:
        """``sigmoid(features @ weights + bias)``, clipped so large logits stay finite."""
        logits = np.clip(features @ self.weights + self.bias, -40.0, 40.0)
        probability: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-logits))
        return probability

    def value(self, features: FloatMatrix) -> npt.NDArray[np.float64]:
        """What the head adds to the score before its sign: by its link."""
        if self.link == "identity":
            linear: npt.NDArray[np.float64] = features @ self.weights + self.bias
            return linear
        return self.probability(features)


@dataclass
class LearnedRouter:
    """Scores prompts by how much the strong model is needed; higher means send to strong."""

    features: tuple[str, ...]
    heads: list[Head]
    embedder: dict[str, Any] = field(default_factory=dict)
    card: dict[str, Any] = field(default_factory=dict)
    embed_words: int | None = None
    """Only the prompt's first words are embedded (as in training), when set."""

    def score_features(self, table: FeatureTable) -> npt.NDArray[np.float64]:
        """Scores from precomputed features (what training and evaluation use)."""
        matrix = table.matrix(self.features)
        score = np.zeros(matrix.shape[0], dtype=np.float64)
        for head in self.heads:
            score += head.sign * head.value(matrix)
        return score

    def score(self, prompts: list[str], embedder: Embedder) -> npt.NDArray[np.float64]:
        """Scores of raw prompts: embed, measure, then apply the heads."""
        table = FeatureTable.compute(
            prompts,
            embedder,
            embed_words=self.embed_words,
            embed="embedding" in self.features,
            choices=choice_sets(self.features),
        )
        return self.score_features(table)

    def check_embedder(self, embedder: Embedder) -> None:
        """Warn when the embedder differs from the one the router was trained with."""
        expected = self.embedder.get("sha256")
        if expected and expected != embedder.sha256:
            logger.warning(
                "router was trained on embedder %s (sha256 %s…), scoring with %s…",
                self.embedder.get("name"),
                str(expected)[:12],
                embedder.sha256[:12],
            )

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of the artifact."""
        return {
            "format": FORMAT,
            "features": list(self.features),
            "text_statistics": list(TEXT_STATISTICS),
            **(
                {"structure_features": list(STRUCTURE_FEATURES)}
                if "structure" in self.features
                else {}
            ),
            **(
                {"choice_features": list(CHOICE_FEATURES), "choice_reading": reading()}
                if set(CHOICE_SETS) & set(self.features)
                else {}
            ),
            "embedder": self.embedder,
            "embed_words": self.embed_words,
            "heads": [
                {
                    "predicts": head.predicts,
                    "sign": head.sign,
                    "bias": head.bias,
                    **({"link": head.link} if head.link != "logistic" else {}),
                    "weights": [float(f"{weight:.7g}") for weight in head.weights],
                }
                for head in self.heads
            ],
            "card": self.card,
        }

    def save(self, path: Path) -> None:
        """Write the artifact as indented JSON (small: 10-90 kB)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2))

    @classmethod
    def load(cls, path: Path) -> LearnedRouter:
        """Read an artifact written by ``save``; a broken one is a ``ConfigError``."""
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"router artifact {path} does not exist")
        try:
            document = orjson.loads(path.read_bytes())
            if document.get("format") != FORMAT:
                raise ConfigError(f"{path} is not a {FORMAT} artifact")
            if document.get("text_statistics", list(TEXT_STATISTICS)) != list(TEXT_STATISTICS):
                raise ConfigError(f"{path} was trained on other text statistics")
            if "structure" in document["features"] and document.get("structure_features") != list(
                STRUCTURE_FEATURES
            ):
                raise ConfigError(f"{path} was trained on other structure features")
            if set(CHOICE_SETS) & set(document["features"]) and (
                document.get("choice_features") != list(CHOICE_FEATURES)
                or document.get("choice_reading") != reading()
            ):
                raise ConfigError(f"{path} was trained on other answer-choice features")
            heads = [
                Head(
                    predicts=str(head["predicts"]),
                    sign=float(head["sign"]),
                    weights=np.asarray(head["weights"], dtype=np.float64),
                    bias=float(head["bias"]),
                    link=str(head.get("link", "logistic")),
                )
                for head in document["heads"]
            ]
            unknown = sorted({head.link for head in heads} - set(LINKS))
            if unknown:
                raise ConfigError(f"{path} has heads of unknown link {', '.join(unknown)}")
            return cls(
                features=tuple(document["features"]),
                heads=heads,
                embedder=dict(document.get("embedder", {})),
                card=dict(document.get("card", {})),
                embed_words=document.get("embed_words"),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise ConfigError(f"{path} is not a readable router artifact ({error})") from None


def bundled_router_path(name: str = "mmlu") -> Path:
    """A router that ships with the package: ``mmlu`` (trained on RouteLLM's MMLU outcomes)
    or ``chat`` (the chat difficulty head, trained on hand-labelled prompts)."""
    return Path(__file__).resolve().parent.parent / "defaults" / f"router-{name}.json"
