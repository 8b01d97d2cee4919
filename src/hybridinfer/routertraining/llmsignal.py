"""The local LLM's own surprise at a prompt, as router features (measured by the benchmark).

One llama.cpp pass over each prompt (truncated to its first ``MAX_TOKENS`` tokens) gives the
logits at every position; from them come the negative log-likelihood of each next token and
the entropy of each next-token distribution. A prompt the small model finds surprising may be
one it cannot answer. The features, per prompt:

``mean_nll``, ``std_nll``, ``p90_nll``, ``mean_entropy``, ``high_loss_share`` (tokens with an
NLL above ``HIGH_LOSS_NATS``) and ``log_tokens`` (of the truncated prompt).

All of MMLU takes tens of minutes on two cores, so each prompt's features are appended to a
JSON-lines cache keyed by content as soon as they are computed: an interrupted pass resumes.
Each line also keeps the seconds its pass took, the serve-time cost of the signal.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from hybridinfer.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
FEATURES = (
    "mean_nll",
    "std_nll",
    "p90_nll",
    "mean_entropy",
    "high_loss_share",
    "log_tokens",
)
MAX_TOKENS = 128  # longer prompts are scored on their first 128 tokens only
HIGH_LOSS_NATS = 5.0  # an NLL above this is a token the model gave under ~0.7 % probability


class TokenScorer(Protocol):
    """A causal language model that returns the logits of one pass over a prompt."""

    @property
    def fingerprint(self) -> str:
        """Identifies the model: cached features of another model are not reused."""
        ...

    def tokenize(self, text: str) -> list[int]:
        """The prompt's tokens, with the model's start-of-text token first."""
        ...

    def logits(self, tokens: list[int]) -> npt.NDArray[np.float32]:
        """One row of next-token logits per input token, shape ``(len(tokens), vocab)``."""
        ...


def token_losses(
    logits: npt.NDArray[np.floating[Any]], tokens: list[int]
) -> tuple[FloatArray, FloatArray]:
    """Each next token's negative log-likelihood and each prediction's entropy (nats).

    Row ``i`` of ``logits`` predicts ``tokens[i + 1]``, so a prompt of n tokens gives n - 1."""
    if len(tokens) < 2:
        return np.zeros(0), np.zeros(0)
    rows = np.asarray(logits[: len(tokens) - 1], dtype=np.float64)
    shifted = rows - rows.max(axis=1, keepdims=True)
    log_total = np.log(np.exp(shifted).sum(axis=1))
    log_probs = shifted - log_total[:, None]
    targets = np.asarray(tokens[1:])
    nll = -log_probs[np.arange(len(targets)), targets]
    entropy = -(np.exp(log_probs) * log_probs).sum(axis=1)
    return nll, entropy


def summarise_losses(nll: FloatArray, entropy: FloatArray, token_count: int) -> FloatArray:
    """The fixed feature vector (``FEATURES``) of one prompt; zeros when nothing was predicted."""
    if len(nll) == 0:
        return np.array([0.0, 0.0, 0.0, 0.0, 0.0, np.log1p(token_count)])
    return np.array(
        [
            nll.mean(),
            nll.std(),
            np.quantile(nll, 0.9),
            entropy.mean(),
            float((nll > HIGH_LOSS_NATS).mean()),
            np.log1p(token_count),
        ]
    )


def prompt_signal(scorer: TokenScorer, prompt: str) -> tuple[FloatArray, int]:
    """The features of one prompt, one pass over its first ``MAX_TOKENS`` tokens, and how many
    tokens that pass read."""
    tokens = scorer.tokenize(prompt)[:MAX_TOKENS]
    nll, entropy = token_losses(scorer.logits(tokens), tokens)
    return summarise_losses(nll, entropy, len(tokens)), len(tokens)


@dataclass(frozen=True)
class Measured:
    """Features of every prompt (rows in prompt order) and the cost of each pass."""

    features: FloatArray
    seconds: FloatArray
    tokens: npt.NDArray[np.int64]


def prompt_key(fingerprint: str, prompt: str) -> str:
    """The cache key of one prompt under one model and truncation."""
    digest = hashlib.sha256(f"{fingerprint}\0{MAX_TOKENS}\0".encode())
    digest.update(prompt.encode())
    return digest.hexdigest()[:24]


def cache_path(cache_dir: Path, fingerprint: str) -> Path:
    """The JSON-lines file holding one model's prompt features."""
    name = hashlib.sha256(fingerprint.encode()).hexdigest()[:12]
    return Path(cache_dir) / f"llmsignal-{name}.jsonl"


def read_cache(path: Path) -> dict[str, dict[str, Any]]:
    """Cached entries by key; a line cut short by an interrupted write is ignored."""
    entries: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return entries
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        entries[entry["key"]] = entry
    return entries


def _stderr_progress(done: int, total: int) -> None:
    print(f"llm signal: {done}/{total} prompts", file=sys.stderr, flush=True)


def measure_prompts(
    scorer: TokenScorer,
    prompts: list[str],
    cache_dir: Path,
    progress: Callable[[int, int], None] = _stderr_progress,
    every: int = 200,
) -> Measured:
    """Features of ``prompts``, computing only those not already in the cache, appending each
    one as it is computed."""
    path = cache_path(cache_dir, scorer.fingerprint)
    entries = read_cache(path)
    keys = [prompt_key(scorer.fingerprint, prompt) for prompt in prompts]
    missing = {key: prompt for key, prompt in zip(keys, prompts, strict=True) if key not in entries}
    path.parent.mkdir(parents=True, exist_ok=True)
    cut_short = path.is_file() and not path.read_bytes().endswith(b"\n")
    with path.open("a") as cache:
        if cut_short and path.stat().st_size:
            cache.write("\n")  # end the line an interrupted write left, so ours parse
        for done, (key, prompt) in enumerate(missing.items(), start=1):
            started = time.perf_counter()
            features, tokens = prompt_signal(scorer, prompt)
            seconds = time.perf_counter() - started
            entry = {
                "key": key,
                "features": features.tolist(),
                "seconds": seconds,
                "tokens": tokens,
            }
            cache.write(json.dumps(entry) + "\n")
            cache.flush()
            entries[key] = entry
            if done % every == 0 or done == len(missing):
                progress(done, len(missing))
    return Measured(
        features=np.array([entries[key]["features"] for key in keys], dtype=np.float64).reshape(
            len(keys), len(FEATURES)
        ),
        seconds=np.array([entries[key]["seconds"] for key in keys], dtype=np.float64),
        tokens=np.array([entries[key]["tokens"] for key in keys], dtype=np.int64),
    )


class LlamaScorer:
    """A GGUF model run by llama-cpp-python on the CPU, scoring prompts only (no generation)."""

    def __init__(self, model_path: Path, threads: int = 2, context: int = MAX_TOKENS) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as error:
            raise ConfigError(
                f"the LLM signal needs llama-cpp-python ({error.name} is missing): "
                "install the llm extra"
            ) from None
        self._path = Path(model_path)
        self._model = Llama(
            model_path=str(model_path),
            n_ctx=context + 8,
            n_batch=context + 8,
            n_threads=threads,
            logits_all=True,
            verbose=False,
        )

    @property
    def fingerprint(self) -> str:
        """The model file's name and size."""
        return f"{self._path.name}:{self._path.stat().st_size}"

    def tokenize(self, text: str) -> list[int]:
        """The prompt's tokens, beginning-of-text first."""
        return list(self._model.tokenize(text.encode(), add_bos=True, special=False))

    def logits(self, tokens: list[int]) -> npt.NDArray[np.float32]:
        """One evaluation of ``tokens`` from an empty context."""
        self._model.reset()  # type: ignore[no-untyped-call]
        self._model.eval(tokens)
        scores: npt.NDArray[np.float32] = self._model.scores[: len(tokens)]
        return scores
