"""The local tier inside the gateway process: the ONNX models named in ``local_models`` (node
``local``) and the in-process steps (node ``local-steps``): redaction and restoring always;
extractive summaries and retrieval when the MiniLM embedding model is built.

Both nodes are private-zone, so data that must stay on premises can always be served here.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

from hybridinfer.backends.inprocess import InProcessBackend, LocalOperation
from hybridinfer.backends.onnx import OnnxBackend
from hybridinfer.core.topology import Node, Tier, Zone
from hybridinfer.decompose.names import NameCheck
from hybridinfer.errors import ConfigError
from hybridinfer.models.catalog import deployment_info, find_model
from hybridinfer.models.embedder import Embedder, LazyEmbedder
from hybridinfer.privacy.ner import NameFinder
from hybridinfer.privacy.nerprocess import ProcessNameFinder
from hybridinfer.privacy.pseudonym import redact_step, restore_step
from hybridinfer.route.difficulty import DifficultyScorer
from hybridinfer.route.learned import LearnedRouter, bundled_router_path
from hybridinfer.settings import Settings
from hybridinfer.signals.registry import deployment_from_info
from hybridinfer.steps.retrieval import KnowledgeBase, default_knowledge_path, load_passages
from hybridinfer.steps.summaries import ExtractiveSummarizer

log = logging.getLogger(__name__)

LOCAL_NODE_ID = "local"
INPROCESS_NODE_ID = "local-steps"
EMBEDDING_MODEL = "minilm-l6"


def local_models(settings: Settings) -> tuple[Node, OnnxBackend]:
    """Node ``local`` with one deployment per local model, and the backend that runs them."""
    node = Node(
        id=LOCAL_NODE_ID,
        tier=Tier.LOCAL,
        zone=Zone.PRIVATE,
        url="inproc://local",
        protocol="onnx",
    )
    models: dict[str, Path] = {}
    for name in settings.local_models:
        path, card = find_model(settings.resolved_models_dir, name)
        deployment = deployment_from_info(node.id, deployment_info(card))
        node.deployments.append(deployment)
        models[OnnxBackend.key(deployment.model, deployment.version)] = path
    backend = OnnxBackend(
        models,
        threads=settings.inference_threads,
        cache_bytes=settings.session_cache_bytes,
        inline_below_us=settings.inline_below_us,
    )
    return node, backend


def name_finder(settings: Settings) -> NameFinder | ProcessNameFinder | None:
    """The process's name finder, in a child process by default (``names_process``): None
    when ``privacy_ner`` is off or the ``ner`` extra is missing (with it on, the privacy gate
    then fails closed: see ``names_check``)."""
    if not (settings.privacy_ner and NameFinder.available()):
        return None
    return ProcessNameFinder() if settings.names_process else NameFinder()


def names_check(
    settings: Settings, finder: NameFinder | ProcessNameFinder | None
) -> NameCheck | None:
    """What the privacy gate reads names with: None when ``privacy_ner`` is off (names are
    not read); a check without a finder when the model is missing (every read fails)."""
    if not settings.privacy_ner:
        return None
    if finder is None:
        log.warning("privacy_ner is on but the `ner` extra is missing: public calls are refused")
    return NameCheck(finder)


def inprocess_steps(
    finder: NameFinder | ProcessNameFinder | None = None,
    embedder: LazyEmbedder | None = None,
) -> tuple[Node, InProcessBackend]:
    """Node ``local-steps`` with one deployment per step, and the backend that runs them."""
    node = Node(
        id=INPROCESS_NODE_ID,
        tier=Tier.LOCAL,
        zone=Zone.PRIVATE,
        url=f"inproc://{INPROCESS_NODE_ID}",
        protocol=InProcessBackend.protocol,
    )
    operations = [*_privacy_steps(finder), *_embedding_steps(embedder)]
    node.deployments = [operation.deployment(node.id) for operation in operations]
    return node, InProcessBackend(operations)


def _privacy_steps(finder: NameFinder | ProcessNameFinder | None) -> list[LocalOperation]:
    """Redaction (the pattern detectors, plus the name finder when there is one) and
    restoring."""
    redact = (
        redact_step if finder is None else functools.partial(redact_step, find_more=finder.find)
    )
    return [
        LocalOperation("redactor", "redact", redact, blocking=finder is not None, latency_ms=0.1),
        LocalOperation("restorer", "restore", restore_step, latency_ms=0.1),
    ]


def shared_embedder(settings: Settings) -> LazyEmbedder | None:
    """The MiniLM embedder the local steps and the difficulty scorer share (loaded on first
    use); None when the model is not built."""
    try:
        model_path, _ = find_model(settings.resolved_models_dir, EMBEDDING_MODEL)
    except ConfigError:
        log.info("%s is not built: no local summaries, retrieval or difficulty", EMBEDDING_MODEL)
        return None
    threads = settings.inference_threads
    return LazyEmbedder(lambda: Embedder(model_path.parent, threads=threads))


def difficulty_scorer(embedder: LazyEmbedder | None) -> DifficultyScorer | None:
    """The bundled chat difficulty head and MMLU router on the shared embedder; None without
    the embedder."""
    if embedder is None:
        return None
    heads = {
        "complexity": LearnedRouter.load(bundled_router_path("chat")),
        "learned": LearnedRouter.load(bundled_router_path("mmlu")),
    }
    return DifficultyScorer(heads, embedder.get)


def _embedding_steps(embedder: LazyEmbedder | None) -> list[LocalOperation]:
    """Summaries and retrieval on MiniLM embeddings; none when the model is not built."""
    if embedder is None:
        return []
    summarizer = ExtractiveSummarizer(embedder)
    knowledge = KnowledgeBase(load_passages(default_knowledge_path()), embedder)
    return [
        LocalOperation(
            "extractive-minilm",
            "summarization",
            summarizer.run,
            blocking=True,
            latency_ms=60.0,
            max_input=2000,
            quality=0.4,
        ),
        LocalOperation(
            "retriever-minilm", "retrieval", knowledge.run, blocking=True, latency_ms=30.0
        ),
    ]
