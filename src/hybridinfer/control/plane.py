"""The composition root: builds the control plane's parts from Settings and runs their
lifecycle. Everything stateful is created here and handed to whoever needs it."""

from __future__ import annotations

import functools
import logging
from pathlib import Path

from hybridinfer.backends.base import Backend
from hybridinfer.backends.inprocess import InProcessBackend, LocalOperation
from hybridinfer.backends.onnx import OnnxBackend
from hybridinfer.backends.openai import OpenAIBackend
from hybridinfer.backends.tfserving import TFServingBackend
from hybridinfer.backends.v2 import V2Backend
from hybridinfer.cache import open_cache
from hybridinfer.control.audit import AuditLog
from hybridinfer.control.jobs import JobService
from hybridinfer.control.keys import KeyRing, generate_key
from hybridinfer.control.policycenter import PolicyCenter
from hybridinfer.control.prober import NodeProber
from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.control.replicas import ReplicaSync
from hybridinfer.control.rollout import RolloutMonitor
from hybridinfer.control.worker import JobWorker, RetryPolicy
from hybridinfer.core.topology import Node, Tier, Zone
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.errors import ConfigError
from hybridinfer.execute.cpuload import LocalCpu
from hybridinfer.execute.executor import Admission, Executor
from hybridinfer.execute.hedge import HedgePolicy
from hybridinfer.execute.retry import Retries
from hybridinfer.execute.streaming import StreamExecutor
from hybridinfer.models.catalog import deployment_info, find_model
from hybridinfer.models.embedder import Embedder
from hybridinfer.models.store import ModelStore
from hybridinfer.objectstore import open_store
from hybridinfer.observe.telemetry import Telemetry
from hybridinfer.pipeline.pipeline import Pipeline
from hybridinfer.policy.document import default_policy_path
from hybridinfer.privacy.ner import NameFinder
from hybridinfer.privacy.pseudonym import redact_step, restore_step
from hybridinfer.queue import open_queue
from hybridinfer.route.router import Router
from hybridinfer.server.shedding import GatewayLoad
from hybridinfer.server.tls import node_client_context
from hybridinfer.settings import Settings
from hybridinfer.signals.breaker import Breakers
from hybridinfer.signals.budget import Ledger, MemoryLedger
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.keybudget import KeyBudgetLedger
from hybridinfer.signals.registry import NodeRegistry, deployment_from_info, node_from_registration
from hybridinfer.signals.sharedledger import CacheLedger
from hybridinfer.steps.retrieval import KnowledgeBase, default_knowledge_path, load_passages
from hybridinfer.steps.summaries import ExtractiveSummarizer, LazyEmbedder
from hybridinfer.store.jobs import JobStore
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink

log = logging.getLogger(__name__)

LOCAL_NODE_ID = "local"
INPROCESS_NODE_ID = "local-steps"
EMBEDDING_MODEL = "minilm-l6"


class ControlPlane:
    """Gateway state, router, executor and the in-process local tier, wired together."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = SqlStore(settings.resolved_store_url)
        node_token = settings.node_token.get_secret_value() if settings.node_token else None
        self.keys = KeyRing(self.store, node_token)
        self.audit = AuditLog(self.store)
        self.registry = NodeRegistry(settings.heartbeat_interval_s)
        self.signals = Signals()
        self.policies = PolicyCenter(
            self.store,
            self.registry,
            settings.policy_file or default_policy_path(),
            audit=self.audit,
        )
        self.rollouts = RolloutMonitor(
            self.store, self.policies.current, self.audit, registry=self.registry
        )
        self.cache = open_cache(settings)
        # One process counts spend in memory; replicas share the counters in the cache.
        self.ledger: Ledger = KeyBudgetLedger(
            MemoryLedger() if settings.cache == "memory" else CacheLedger(self.cache),
            self.keys.budget_of,
        )
        self.decomposer = Decomposer(load_rules(settings.rules_file or default_rules_path()))
        self.breakers = Breakers(
            settings.breaker_failures, settings.breaker_open_s, settings.breaker_max_open_s
        )
        self.router = Router(
            self.registry,
            self.signals,
            self.policies.current,
            self.ledger,
            self.breakers,
            choose_policy=self.policies.choose,
            rollout_percent=self.rollouts.percent,
        )
        self.traces = TraceSink(self.store)
        self.traces.observers.append(self.rollouts.record)
        # OpenTelemetry spans, built from finished traces off the request path.
        self.telemetry = None if settings.otel_exporter == "off" else Telemetry(settings)
        if self.telemetry is not None:
            self.traces.observers.append(self.telemetry.observe)
        self.rate_limiter = RateLimiter(
            settings.rate_limit_per_minute, self.cache, settings.rate_limit_mode
        )
        self.objects = open_store(settings)
        self.models = ModelStore(self.objects, settings.keep_model_versions)
        self.local_node, local_backend = self._load_local_tier()
        self.steps_node, steps_backend = self._load_inprocess_steps()
        tls = node_client_context(settings)
        self.backends: dict[str, Backend] = {"onnx": local_backend, "v2": V2Backend(tls=tls)}
        self.backends[InProcessBackend.protocol] = steps_backend
        self.backends[TFServingBackend.protocol] = TFServingBackend(tls=tls)
        self.openai = OpenAIBackend(tls=tls)
        self.backends[OpenAIBackend.protocol] = self.openai
        self.prober = NodeProber(self.registry, self.backends, settings.probe_interval_s)
        self.executor = Executor(
            self.backends,
            self.signals,
            self.ledger,
            lambda: self.policies.current().policy.budget,
            breakers=self.breakers,
            admission=Admission(
                settings.admission_max_in_flight,
                settings.admission_max_queued,
                settings.shed_retry_after_s,
            ),
            retry=Retries(
                settings.retry_attempts,
                settings.retry_base_ms / 1000.0,
                settings.retry_max_ms / 1000.0,
                settings.attempt_timeout_ms / 1000.0 or None,
                settings.attempt_timeout_factor,
                settings.attempt_timeout_floor_ms / 1000.0,
            ),
            hedging=HedgePolicy(settings.hedge_delay_ms, settings.hedge_below_latency_ms),
        )
        self.gateway_load = GatewayLoad(
            settings.shed_max_in_flight,
            settings.shed_max_queued,
            settings.shed_max_wait_ms / 1000.0,
            settings.shed_retry_after_s,
        )
        self.local_cpu = LocalCpu(
            [self.local_node, self.steps_node],
            self.executor.limiter(LOCAL_NODE_ID),
            interval_s=settings.local_cpu_interval_s,
            alpha=settings.local_cpu_alpha,
            saturated=settings.local_cpu_saturated,
            saturated_in_flight=settings.local_cpu_in_flight,
        )
        self.pipeline = Pipeline(
            self.decomposer,
            self.router,
            self.executor,
            self.traces,
            settings.request_timeout_ms,
            streamer=StreamExecutor(
                self.backends, self.signals, self.executor.spend, self.executor.retry
            ),
        )
        self._build_state_layer()

    def _build_state_layer(self) -> None:
        """Async tasks (queue, task rows, workers) and the sync between replicas."""
        settings = self.settings
        self.queue = open_queue(settings)
        task_store = JobStore(self.store)
        self.tasks = JobService(task_store, self.queue, self.decomposer)
        retry = RetryPolicy(
            settings.task_max_attempts, settings.task_retry_base_s, settings.task_retry_max_s
        )
        self.worker = JobWorker(self.queue, task_store, self.pipeline, settings.task_workers, retry)
        self.replicas = ReplicaSync(
            self.store,
            self.registry,
            self.ledger,
            lambda: self.policies.current().policy.budget,
            settings.node_sync_interval_s,
        )

    def _load_local_tier(self) -> tuple[Node, OnnxBackend]:
        node = Node(
            id=LOCAL_NODE_ID,
            tier=Tier.LOCAL,
            zone=Zone.PRIVATE,
            url="inproc://local",
            protocol="onnx",
        )
        models: dict[str, Path] = {}
        for name in self.settings.local_models:
            path, card = find_model(self.settings.resolved_models_dir, name)
            deployment = deployment_from_info(node.id, deployment_info(card))
            node.deployments.append(deployment)
            models[OnnxBackend.key(deployment.model, deployment.version)] = path
        return node, OnnxBackend(
            models,
            threads=self.settings.inference_threads,
            cache_bytes=self.settings.session_cache_bytes,
        )

    def _load_inprocess_steps(self) -> tuple[Node, InProcessBackend]:
        """Redaction and restoring always; extractive summaries and retrieval when the
        MiniLM embedding model is built (loaded on first use)."""
        node = Node(
            id=INPROCESS_NODE_ID,
            tier=Tier.LOCAL,
            zone=Zone.PRIVATE,
            url=f"inproc://{INPROCESS_NODE_ID}",
            protocol=InProcessBackend.protocol,
        )
        finder = NameFinder() if self.settings.privacy_ner and NameFinder.available() else None
        redact = (
            redact_step if finder is None else functools.partial(redact_step, find_more=finder.find)
        )
        operations = [
            LocalOperation(
                "redactor", "redact", redact, blocking=finder is not None, latency_ms=0.1
            ),
            LocalOperation("restorer", "restore", restore_step, latency_ms=0.1),
        ]
        models_dir = self.settings.resolved_models_dir
        try:
            model_path, _ = find_model(models_dir, EMBEDDING_MODEL)
        except ConfigError:
            log.info("%s is not built: no local summaries or retrieval", EMBEDDING_MODEL)
        else:
            threads = self.settings.inference_threads
            embedder = LazyEmbedder(lambda: Embedder(model_path.parent, threads=threads))
            summarizer = ExtractiveSummarizer(embedder)
            knowledge = KnowledgeBase(load_passages(default_knowledge_path()), embedder)
            operations += [
                LocalOperation(
                    "extractive-minilm", "summarization", summarizer.run, True, 60.0, 2000, 0.4
                ),
                LocalOperation("retriever-minilm", "retrieval", knowledge.run, True, 30.0),
            ]
        node.deployments = [operation.deployment(node.id) for operation in operations]
        return node, InProcessBackend(operations)

    async def start(self) -> str | None:
        """Migrate the store, register the local tier, ensure an admin key exists.

        Returns a newly generated admin key (to print once), or None.
        """
        await self.store.migrate()
        self.registry.add(self.local_node)
        self.registry.add(self.steps_node)
        for registration in self.settings.static_nodes:
            self.registry.add(node_from_registration(registration))
        self.prober.start()
        self.local_cpu.start()
        await self.policies.start()
        self.rollouts.start()
        generated: str | None = None
        if self.settings.bootstrap_key is not None:
            await self.keys.ensure(
                "bootstrap", {"admin"}, self.settings.bootstrap_key.get_secret_value()
            )
        elif not await self.store.has_admin_key():
            generated = await self.keys.create("bootstrap", {"admin"}, generate_key())
        self.traces.start()
        if self.telemetry is not None:
            self.telemetry.start()
        await self.queue.connect()
        self.worker.start()
        if not self.store.url.startswith("sqlite"):  # a shared store: other replicas exist
            self.replicas.start()
        return generated

    async def stop(self) -> None:
        await self.replicas.stop()
        await self.worker.stop()
        await self.queue.close()
        await self.prober.stop()
        await self.local_cpu.stop()
        await self.policies.stop()
        await self.rollouts.stop()
        await self.traces.stop()
        if self.telemetry is not None:
            await self.telemetry.stop()
        for backend in self.backends.values():
            await backend.aclose()
        await self.objects.aclose()
        await self.cache.aclose()
        await self.store.close()
