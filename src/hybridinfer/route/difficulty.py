"""How hard a subtask's prompt is, 0..1: a routing signal read by policy conditions
(``subtask.difficulty``) and by the router's difficulty knob.

Three signals, combined by the policy's ``router.weights`` (default: the first alone):

- ``complexity``: the chat difficulty head's probability that the prompt needs the strong
  tier (``defaults/router-chat.json``, trained on hand-labelled chat prompts by
  ``hybridinfer router train-difficulty``);
- ``learned``: the MMLU router's expected quality gain of the strong model plus its length
  prior (``defaults/router-mmlu.json``), as its rank among that router's training prompts;
- ``words``: the prompt's length in words, ranked the same way.

Both heads read one MiniLM embedding of the prompt's first ``MAX_WORDS`` words. A knob's
``max_quality_drop`` is the threshold itself; a ``target_cloud_share`` becomes the difficulty
at that quantile of this replica's recent difficulties of the capability once ``LIVE_MIN`` are
seen (policy ``router.calibration: live``), else of the reference quantiles in the heads'
cards.

Scoring runs on a thread of its own, bounded by the policy's ``router.timeout_ms``, and is
cached by the prompt's content; a failure or a timeout leaves the difficulty unset and the
decision is taken without it (the trace says so).
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import hashlib
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.core.chat import content_text
from hybridinfer.core.decision import Decision, Verdict
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.decompose.rules import split_reference
from hybridinfer.models.embedder import Embedder
from hybridinfer.policy.document import DifficultyKnob, RouterPolicy
from hybridinfer.route.context import RouteContext
from hybridinfer.route.learned import FeatureTable, LearnedRouter, choice_sets
from hybridinfer.route.router import Router
from hybridinfer.store.retained import RetainedPrompts

LIVE_MIN = 200
"""Recent prompts a live threshold needs before it replaces the reference."""
LIVE_WINDOW = 2000
CACHE_SIZE = 4096
MAX_WORDS = 32
"""The heads read the first words only: MiniLM costs ~7 ms for a short sentence and ~65 ms
for 200 words on 2 cores (the text statistics and the length signal count every word)."""
PROBABILITY = "complexity"
"""The signal that is a probability; the others enter as ranks."""


def prompt_of(subtask: Subtask, request_inputs: Mapping[str, Any]) -> str | None:
    """The text a subtask's difficulty is read from: a chat's last user message, else its
    first text input."""
    for reference in subtask.inputs.values():
        if not isinstance(reference, str) or not reference.startswith("$"):
            continue
        source, name = split_reference(reference)
        value = request_inputs.get(name) if source == "inputs" else None
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
            users = [m for m in value if m.get("role") == "user"]
            text = content_text(users[-1].get("content")) if users else ""
            if text.strip():
                return text
    return None


class Ranks:
    """A sliding window of recent values, and a value's rank among them (0..1)."""

    def __init__(self, size: int = LIVE_WINDOW) -> None:
        self._order: deque[float] = deque()
        self._sorted: list[float] = []
        self._size = size

    def __len__(self) -> int:
        return len(self._sorted)

    def add(self, value: float) -> None:
        self._order.append(value)
        bisect.insort(self._sorted, value)
        if len(self._order) > self._size:
            self._sorted.pop(bisect.bisect_left(self._sorted, self._order.popleft()))

    def rank(self, value: float) -> float:
        return bisect.bisect_right(self._sorted, value) / max(1, len(self._sorted))

    def quantile(self, share: float) -> float:
        index = min(len(self._sorted) - 1, max(0, int(share * len(self._sorted))))
        return self._sorted[index]


@dataclass(frozen=True, slots=True)
class Difficulty:
    """One prompt's difficulty and its raw signals (for the trace)."""

    value: float
    signals: dict[str, float]


@dataclass(frozen=True, slots=True)
class Threshold:
    """A knob turned into a difficulty threshold, with how (for the trace and the reason)."""

    value: float
    knob: str
    calibration: str


class DifficultyScorer:
    """Scores prompts; one per process, shared by every request.

    ``heads`` maps a signal to its router artifact: ``complexity`` (the chat difficulty head)
    and ``learned`` (the MMLU router, whose card also holds the length quantiles)."""

    def __init__(
        self, heads: Mapping[str, LearnedRouter], embedder: Callable[[], Embedder]
    ) -> None:
        self._heads = dict(heads)
        self._reference: dict[str, np.ndarray] = {}
        for head in self._heads.values():
            calibration = head.card.get("calibration") or {}
            for name in ("complexity", "learned", "words"):
                if name in calibration:
                    self._reference[name] = np.asarray(calibration[name], dtype=np.float64)
        self._embedder = embedder
        self._thread = concurrent.futures.ThreadPoolExecutor(1, "hybridinfer-difficulty")
        self._cache: OrderedDict[str, dict[str, float]] = OrderedDict()
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        """The prompts' MiniLM embeddings, shared with the answer cache (``embedding``)."""
        self._recent: dict[str, Ranks] = {}
        self._warmed: concurrent.futures.Future[dict[str, float]] | None = None
        self.retained: RetainedPrompts | None = None
        """The opt-in sample of the prompts read here, kept for router replay."""

    def with_heads(self, heads: Mapping[str, LearnedRouter]) -> DifficultyScorer:
        """A scorer of its own (thread, cache, recent difficulties) on the same embedder, with
        ``heads`` replacing these: replay scores a staged router without slowing live ones."""
        return DifficultyScorer({**self._heads, **heads}, self._embedder)

    def warm(self) -> None:
        """Load the embedder and score once on the scoring thread, in the background (a
        second or two): the first request's scoring would not fit its time bound."""
        if self._warmed is None:
            self._warmed = self._thread.submit(self._score_text, "warm up")

    @property
    def loaded(self) -> bool:
        """Whether the warm-up has finished (a failed one counts: requests decide without the
        difficulty and say why, rather than wait)."""
        return self._warmed is not None and self._warmed.done()

    def signals(self, text: str, wanted: frozenset[str] | None = None) -> dict[str, float]:
        """The raw signals of ``text`` (blocking: embeds once for every head), cached by
        content. ``wanted``: only these heads are scored (every head when None)."""
        key = hashlib.sha256(text.encode()).hexdigest() + ",".join(sorted(wanted or ()))
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        found = self._cache[key] = self._score_text(text, wanted)
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return found

    def _score_text(self, text: str, wanted: frozenset[str] | None = None) -> dict[str, float]:
        found = {"words": float(len(text.split()))}
        heads = {n: h for n, h in self._heads.items() if wanted is None or n in wanted}
        if heads:
            # Only the feature sets the scored heads read: the question-form features cost
            # ~0.6 ms a prompt and the default chat head does not use them.
            needs = {feature for head in heads.values() for feature in head.features}
            table = FeatureTable.compute(
                [text],
                self._embedder(),
                embed_words=MAX_WORDS,
                embed="embedding" in needs,
                structure="structure" in needs,
                choices=choice_sets(needs),
            )
            for name, head in heads.items():
                found[name] = float(head.score_features(table)[0])
            # the whole prompt was embedded (heads without the embedding embed nothing)
            if table.embedding.shape[1] and len(text.split()) <= MAX_WORDS:
                self._keep_vector(text, table.embedding[0].astype(np.float32))
        return found

    def _keep_vector(self, text: str, vector: npt.NDArray[np.float32]) -> None:
        key = hashlib.sha256(text.encode()).hexdigest()
        self._vectors[key] = vector
        self._vectors.move_to_end(key)
        if len(self._vectors) > CACHE_SIZE:
            self._vectors.popitem(last=False)

    def vector(self, text: str) -> npt.NDArray[np.float32] | None:
        """The unit MiniLM embedding of a prompt of at most ``MAX_WORDS`` words (blocking):
        the one the difficulty heads read when they scored it, else embedded now. None for a
        longer prompt (the heads embed its first words only)."""
        if len(text.split()) > MAX_WORDS:
            return None
        found = self._vectors.get(hashlib.sha256(text.encode()).hexdigest())
        if found is not None:
            return found
        vector: npt.NDArray[np.float32] = self._embedder().embed([" ".join(text.split())])[0]
        self._keep_vector(text, vector)
        return vector

    async def embedding(self, text: str, timeout_s: float = 1.0) -> npt.NDArray[np.float32] | None:
        """``vector`` on the scoring thread, bounded by ``timeout_s``; None past it or when
        the model fails (the answer cache then looks up exactly only)."""
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(self._thread, self.vector, text), timeout_s
            )
        except Exception:  # a slow or broken embedder costs the semantic lookup, nothing more
            return None

    async def score(
        self, capability: str, text: str, policy: RouterPolicy, bounded: bool = True
    ) -> Difficulty:
        """The difficulty of ``text``; raises TimeoutError past the policy's bound (unless not
        ``bounded``: replay waits) and any error of the model (the caller decides without it)."""
        loop = asyncio.get_running_loop()
        wanted = frozenset(name for name, weight in policy.weights.items() if weight > 0)
        raw = await asyncio.wait_for(
            loop.run_in_executor(self._thread, self.signals, text, wanted),
            policy.timeout_ms / 1000.0 if bounded else None,
        )
        total = value = 0.0
        for name, weight in policy.weights.items():
            if weight <= 0:
                continue
            if name not in raw:
                raise LookupError(f"no {name} signal: its router artifact is not loaded")
            part = raw[name] if name == PROBABILITY else self._reference_rank(name, raw[name])
            value += weight * part
            total += weight
        value /= total
        self._recent.setdefault(capability, Ranks()).add(value)
        return Difficulty(value, {k: round(v, 4) for k, v in raw.items()})

    def threshold(self, capability: str, knob: DifficultyKnob, policy: RouterPolicy) -> Threshold:
        """The difficulty at or above which the capability's prompts go to the cloud."""
        if knob.max_quality_drop is not None:
            drop = knob.max_quality_drop
            return Threshold(drop, f"max quality drop {drop:.0%}", "fixed")
        share = knob.target_cloud_share or 0.0
        label = f"target cloud share {share:.0%}"
        recent = self._recent.get(capability)
        if policy.calibration == "live" and recent is not None and len(recent) >= LIVE_MIN:
            return Threshold(recent.quantile(1.0 - share), label, f"live ({len(recent)} prompts)")
        return Threshold(self._reference_quantile(1.0 - share, policy), label, "reference")

    def _reference_rank(self, name: str, value: float) -> float:
        table = self._reference.get(name)
        if table is None:
            return 0.5
        return float(np.searchsorted(table, value, side="right")) / len(table)

    def _reference_quantile(self, share: float, policy: RouterPolicy) -> float:
        """The weighted mean of each signal's reference quantile at ``share`` (a rank's
        quantile is ``share`` itself); exact when one signal carries all the weight."""
        total = value = 0.0
        for name, weight in policy.weights.items():
            if weight <= 0:
                continue
            table = self._reference.get(name) if name == PROBABILITY else None
            part = share
            if table is not None:
                part = float(np.interp(share, np.linspace(0.0, 1.0, len(table)), table))
            value += weight * part
            total += weight
        return value / total if total else share

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)


async def decide_reading_difficulty(
    router: Router,
    scorer: DifficultyScorer | None,
    subtask: Subtask,
    context: RouteContext,
    request_inputs: Mapping[str, Any],
) -> Decision:
    """The router's decision, with the prompt's difficulty read first where it can matter: a
    capability the policy's ``router`` section lists, routing left to the router with
    ``prefer: balanced``, and candidates on more than one tier surviving the filters (else
    nothing is scored)."""
    decision = router.decide(subtask, context)
    settings = context.policy.policy.router if context.policy is not None else None
    options = context.options
    if settings is None or not settings.enabled or options.route != "auto":
        return decision
    if options.prefer != "balanced":  # the knob acts at the caller's balance only
        return decision
    knob = settings.capabilities.get(subtask.capability)
    tiers = {c.node.tier for c in decision.candidates if c.rejected_by is None}
    text = prompt_of(subtask, request_inputs) if knob is not None and len(tiers) > 1 else None
    if knob is None or text is None:
        return decision
    if scorer is None:
        decision.router_note = "difficulty not read: no scorer (minilm-l6 is not built)"
        return decision
    try:
        difficulty = await scorer.score(subtask.capability, text, settings)
    except Exception as error:  # a slow or broken scorer never fails the request
        decision.router_note = f"difficulty not read ({type(error).__name__}): decided without it"
        return decision
    if scorer.retained is not None:
        sensitive = subtask.privacy is Privacy.SENSITIVE
        scorer.retained.offer(context.request_id, subtask.id, subtask.capability, text, sensitive)
    threshold = scorer.threshold(subtask.capability, knob, settings)
    subtask.difficulty = difficulty.value
    context.verdicts[subtask.id] = Verdict(
        difficulty.value, threshold.value, threshold.knob, threshold.calibration, difficulty.signals
    )
    return router.decide(subtask, context)
