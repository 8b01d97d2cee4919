"""The composition root: builds the control plane's parts from Settings and runs their
lifecycle. Everything stateful is created here and handed to whoever needs it.

Each ``_build_*`` method builds one part from the parts before it; ``_parts`` lists the start
order once, and stopping is its reverse (``lifecycle.py``). Handlers never receive this
object: they get the one service they call from ``services`` (house rule 12).
"""

from __future__ import annotations

import logging

from hybridinfer.answers import open_answers
from hybridinfer.answers.stats import AnswerCollector
from hybridinfer.backends.base import Backend
from hybridinfer.backends.inprocess import InProcessBackend
from hybridinfer.backends.openai import OpenAIBackend
from hybridinfer.backends.tfserving import TFServingBackend
from hybridinfer.backends.v2 import V2Backend
from hybridinfer.cache import open_cache
from hybridinfer.control.answers import AnswerService
from hybridinfer.control.artifacts import ArtifactService
from hybridinfer.control.audit import AuditLog
from hybridinfer.control.canarywalk import CanaryWalker
from hybridinfer.control.jobs import JobService
from hybridinfer.control.keyadmin import KeyService
from hybridinfer.control.keys import KeyRing, generate_key
from hybridinfer.control.learning import FeedbackService, LearnerService
from hybridinfer.control.lifecycle import Lifecycle, Part
from hybridinfer.control.localtier import (
    LOCAL_NODE_ID,
    difficulty_scorer,
    inprocess_steps,
    local_models,
    name_finder,
    names_check,
    shared_embedder,
)
from hybridinfer.control.metrics import MetricsService, worker_expositions
from hybridinfer.control.nodes import NodeService
from hybridinfer.control.policycenter import PolicyCenter
from hybridinfer.control.prober import NodeProber
from hybridinfer.control.ratelimit import RateLimiter
from hybridinfer.control.readings import PlaneReadings
from hybridinfer.control.replay import ReplayService
from hybridinfer.control.replicas import ReplicaSync
from hybridinfer.control.retention import forget_unless_kept, retained_sample
from hybridinfer.control.rollout import RolloutMonitor
from hybridinfer.control.rolloutwalk import RolloutWalks
from hybridinfer.control.rules import RuleService
from hybridinfer.control.services import GatewayServices
from hybridinfer.control.stats import StatsService
from hybridinfer.control.traces import TraceService
from hybridinfer.control.worker import JobWorker, RetryPolicy
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.execute.cpuload import LocalCpu
from hybridinfer.execute.executor import Admission, Executor
from hybridinfer.execute.hedge import HedgePolicy
from hybridinfer.execute.retry import Retries
from hybridinfer.execute.reuse import AnswerReuse
from hybridinfer.execute.streaming import StreamExecutor
from hybridinfer.learning.engine import Learners
from hybridinfer.learning.sync import LearnerSync
from hybridinfer.models.store import ModelStore
from hybridinfer.objectstore import open_store
from hybridinfer.observe.looplag import LoopLag
from hybridinfer.observe.metrics import Metrics
from hybridinfer.observe.stats import TrafficWindow
from hybridinfer.observe.telemetry import Telemetry
from hybridinfer.pipeline.pipeline import Pipeline
from hybridinfer.policy.answers import AnswersPolicy
from hybridinfer.policy.document import BudgetPolicy, default_policy_path
from hybridinfer.queue import open_queue
from hybridinfer.route.router import Router
from hybridinfer.server.shedding import GatewayLoad
from hybridinfer.server.tls import node_client_context, node_grpc_credentials
from hybridinfer.settings import Settings
from hybridinfer.signals.breaker import Breakers
from hybridinfer.signals.budget import BudgetState, Ledger, MemoryLedger
from hybridinfer.signals.ejection import Ejections
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.exchanges import ExchangeWindows
from hybridinfer.signals.keybudget import KeyBudgetLedger
from hybridinfer.signals.registry import NodeRegistry, node_from_registration
from hybridinfer.signals.sharedledger import CacheLedger
from hybridinfer.store.jobs import JobStore
from hybridinfer.store.learnerlog import LearnerLog
from hybridinfer.store.snapshots import SignalSnapshots
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink

log = logging.getLogger(__name__)


class ControlPlane:
    """Gateway state, router, executor and the in-process local tier, wired together."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._build_state()
        self._build_signals()
        self._build_routing()
        self._build_observation()
        self._build_execution()
        self._build_jobs()
        self._build_metrics()
        self.services = self._build_services()
        self._generated_key: str | None = None
        self.lifecycle = Lifecycle(self._parts())

    def _build_state(self) -> None:
        """The stores: relational (keys, audit), cache, and the object store with the models."""
        settings = self.settings
        self.store = SqlStore(settings.resolved_store_url)
        node_token = settings.node_token.get_secret_value() if settings.node_token else None
        self.keys = KeyRing(self.store, node_token)
        self.audit = AuditLog(self.store)
        self.cache = open_cache(settings)
        self.objects = open_store(settings)
        self.models = ModelStore(self.objects, settings.keep_model_versions)

    def _build_signals(self) -> None:
        """What routing reads and the gateway's own guards: nodes, latencies, breakers,
        spend, the rate limit and the gateway's inference slots."""
        settings = self.settings
        self.registry = NodeRegistry(settings.heartbeat_interval_s)
        exchanges = ExchangeWindows(settings.exchange_window_s, settings.slow_exchange_ms)
        ejections = Ejections(max_s=settings.eject_max_s, max_share=settings.eject_max_share)
        self.signals = Signals(exchanges=exchanges, ejections=ejections)
        self.breakers = Breakers(
            failure_threshold=settings.breaker_failures,
            open_seconds=settings.breaker_open_s,
            max_open_seconds=settings.breaker_max_open_s,
            reset_after=settings.breaker_reset_successes,
        )
        # One process counts spend in memory; replicas share the counters in the cache.
        counters = MemoryLedger() if settings.cache == "memory" else CacheLedger(self.cache)
        self.ledger: Ledger = KeyBudgetLedger(counters, self.keys.budget_of)
        self.rate_limiter = RateLimiter(
            settings.rate_limit_per_minute,
            self.cache,
            settings.rate_limit_mode,
            lease=settings.cache != "memory",  # shared: a round trip saved per leased unit
        )
        self.gateway_load = GatewayLoad(
            max_in_flight=settings.shed_max_in_flight,
            max_queued=settings.shed_max_queued,
            max_wait_s=settings.shed_max_wait_ms / 1000.0,
            retry_after_s=settings.shed_retry_after_s,
            max_busy=settings.shed_max_busy,
            busy_floor=settings.shed_busy_in_flight,
        )

    def _build_routing(self) -> None:
        """Policy versions and canaries, model rollouts, the rule table, and the router."""
        settings = self.settings
        self.policies = PolicyCenter(
            self.store,
            self.registry,
            settings.policy_file or default_policy_path(),
            audit=self.audit,
        )
        self.rollouts = RolloutMonitor(
            self.store, self.policies.current, self.audit, registry=self.registry
        )
        self.decomposer = Decomposer(load_rules(settings.rules_file or default_rules_path()))
        self.learners = Learners(lambda: self.policies.current().policy.learning)
        self.learner_log = LearnerLog(self.store)
        self.learner_sync = LearnerSync(
            self.learners,
            self.learner_log,
            lambda: self.policies.current().policy.learning.feedback_window_s,
            interval_s=settings.learner_sync_interval_s,
            enabled=lambda: self.policies.current().policy.learning.enabled,
        )
        self.router = Router(
            self.registry,
            self.signals,
            self.policies.current,
            ledger=self.ledger,
            breakers=self.breakers,
            choose_policy=self.policies.choose,
            rollout_percent=self.rollouts.percent,
            learners=self.learners,
        )

    def _build_observation(self) -> None:
        """The trace sink, with rollout figures and (when exporting) spans observing it."""
        self.traces = TraceSink(self.store)
        self.traces.snapshots = self.router.snapshots = SignalSnapshots()
        self.walks = CanaryWalker(
            self.store,
            self.policies,
            self.audit,
            self.traces.flush,
            self.settings.walk_tick_s,
            self.settings.walk_lease_ttl_s,
        )
        # Guarded model rollouts walk under the same lease and loop as policy canaries.
        self.walks.lead(RolloutWalks(self.store, self.rollouts, self.policies.current, self.audit))
        self.traces.observers.append(self.rollouts.record)
        self.traces.observers.append(self.learners.observe_trace)
        # OpenTelemetry spans, built from finished traces off the request path.
        exporter = self.settings.otel_exporter
        self.telemetry = None if exporter == "off" else Telemetry(self.settings)
        if self.telemetry is not None:
            self.traces.observers.append(self.telemetry.observe)

    def _build_execution(self) -> None:
        """The local tier, one backend per protocol, the prober, the executor, the pipeline."""
        settings = self.settings
        self.local_node, local_backend = local_models(settings)
        self.finder, embedder = name_finder(settings), shared_embedder(settings)
        self.steps_node, steps_backend = inprocess_steps(self.finder, embedder)
        self.names = names_check(settings, self.finder)
        self.difficulty = difficulty_scorer(embedder)
        self.retained = retained_sample(settings, self.traces, self.difficulty)
        tls = node_client_context(settings)
        self.openai = OpenAIBackend(tls=tls)
        self.backends: dict[str, Backend] = {
            "onnx": local_backend,
            "v2": V2Backend(tls=tls, grpc_credentials=node_grpc_credentials(settings)),
            InProcessBackend.protocol: steps_backend,
            TFServingBackend.protocol: TFServingBackend(tls=tls),
            OpenAIBackend.protocol: self.openai,
        }
        self.prober = NodeProber(
            self.registry,
            self.backends,
            settings.probe_interval_s,
            breakers=self.breakers,
            exchanges=self.signals.exchanges,
        )
        self.executor = Executor(
            self.backends,
            self.signals,
            self.ledger,
            self._budget_policy,
            breakers=self.breakers,
            admission=_admission(settings),
            retry=_retries(settings),
            hedging=HedgePolicy(
                delay_ms=settings.hedge_delay_ms,
                below_latency_ms=settings.hedge_below_latency_ms,
                latency_sensitive=settings.hedge_latency_sensitive,
            ),
        )
        self.local_cpu = LocalCpu(
            [self.local_node, self.steps_node],
            self.executor.limiter(LOCAL_NODE_ID),
            interval_s=settings.local_cpu_interval_s,
            alpha=settings.local_cpu_alpha,
            saturated=settings.local_cpu_saturated,
            saturated_in_flight=settings.local_cpu_in_flight,
        )
        self._build_answers()
        streamer = StreamExecutor(
            self.backends, self.signals, self.executor.spend, self.executor.retry
        )
        self.pipeline = Pipeline(
            self.decomposer,
            self.router,
            self.executor,
            self.traces,
            settings.request_timeout_ms,
            streamer=streamer,
            names=self.names,
            difficulty=self.difficulty,
        )

    def _build_answers(self) -> None:
        """The cache stage after routing, reading the prompt embedding the router computed."""
        difficulty = self.difficulty
        embed = None if difficulty is None else difficulty.embedding
        self.answers = open_answers(self.settings, self._answers_policy, embed)
        if self.answers is not None:
            self.executor.answers = AnswerReuse(self.answers)

    def _build_jobs(self) -> None:
        """Async tasks (queue, task rows, workers) and the sync between replicas."""
        settings = self.settings
        self.queue = open_queue(settings)
        job_store = JobStore(self.store)
        self.jobs = JobService(job_store, self.queue, self.decomposer)
        retry = RetryPolicy(
            max_attempts=settings.task_max_attempts,
            base_s=settings.task_retry_base_s,
            max_s=settings.task_retry_max_s,
        )
        self.worker = JobWorker(
            self.queue, job_store, self.pipeline, concurrency=settings.task_workers, retry=retry
        )
        self.replicas = ReplicaSync(
            self.store,
            self.registry,
            self.ledger,
            self._budget_policy,
            interval_s=settings.node_sync_interval_s,
        )

    def _build_metrics(self) -> None:
        """Prometheus metrics (a readings protocol, not this object) and the dashboard's
        traffic window, both fed from every finished trace."""
        self.readings = readings = PlaneReadings(
            registry=self.registry,
            executor=self.executor,
            budget=self._budget_state,
            traces=self.traces,
            rate_limiter=self.rate_limiter,
            job_counts=lambda: self.worker.counts,
            gateway_load=self.gateway_load,
            local_cpu=self.local_cpu,
        )
        self.metrics = Metrics(readings)
        if self.answers is not None:
            self.metrics.registry.register(AnswerCollector(self.answers.stats))
        self.traces.observers.append(self.metrics.requests.record)
        self.traffic = TrafficWindow()  # the dashboard's counts (GET /v1/stats)
        self.traces.observers.append(self.traffic.record)
        interval_ms = self.settings.loop_lag_interval_ms
        self.loop_lag = None
        if interval_ms > 0:
            self.loop_lag = LoopLag(
                self.metrics.registry, interval_ms / 1000.0, self.settings.loop_stall_ms / 1000.0
            )

    def _build_services(self) -> GatewayServices:
        """One narrow service per handler family, each given only the parts it uses."""
        settings = self.settings
        answers = AnswerService(self.answers, self.audit)
        return GatewayServices(
            pipeline=self.pipeline,
            nodes=NodeService(
                registry=self.registry,
                store=self.store,
                audit=self.audit,
                breakers=self.breakers,
                heartbeat_interval_s=settings.heartbeat_interval_s,
                loading=self.loading,
                ejections=self.signals.ejections,
            ),
            traces=TraceService(self.traces, feedback=self.learner_log.get_feedback),
            jobs=self.jobs,
            policies=self.policies,
            rollouts=self.rollouts,
            rules=RuleService(self.decomposer, self.audit),
            keys=KeyService(
                self.keys, self.audit, settings.key_rotation_grace_s, answers.flush_revoked
            ),
            artifacts=ArtifactService(self.models, settings.artifact_url_ttl_s),
            audit=self.audit,
            metrics=MetricsService(self.metrics, self.queue, worker_expositions(settings)),
            stats=StatsService(
                traffic=self.traffic,
                traces=self.traces,
                budget=self._budget_state,
                telemetry=self.telemetry,
                exporter=settings.otel_exporter,
                answers=answers.summary,
            ),
            feedback=FeedbackService(
                self.traces, self.learner_log, lambda: self.policies.current().policy.learning
            ),
            learners=LearnerService(self.learners, self.learner_log, self.audit),
            replay=ReplayService(
                self.store,
                self.policies.load_version,
                lambda: self.traces.flush(open_snapshots=True),
                retained=self.retained,
                scorer=self.difficulty,
            ),
            walks=self.walks,
            answers=answers,
        )

    async def _forget_retained(self) -> None:
        await forget_unless_kept(self.store, self.retained)

    def _parts(self) -> list[Part]:
        """Start order, top to bottom; ``stop`` runs it bottom to top."""
        telemetry = self.telemetry
        parts = [
            Part("store", start=self.store.migrate, stop=self.store.close),
            Part("retained prompts", start=self._forget_retained),
            Part("cache", stop=self.cache.aclose),
            Part("object store", stop=self.objects.aclose),
            *([] if self.answers is None else [Part("answers", stop=self.answers.aclose)]),
            Part("backends", stop=self._close_backends),
            Part("known nodes", start=self._register_known_nodes),
            Part("admin key", start=self._bootstrap_admin_key),
            *([] if telemetry is None else [Part("spans", telemetry.start, telemetry.stop)]),
            Part("trace sink", start=self.traces.start, stop=self.traces.stop),
            Part("policies", start=self.policies.start, stop=self.policies.stop),
            Part("learner", start=self.learner_sync.start, stop=self.learner_sync.stop),
            Part("rollouts", start=self.rollouts.start, stop=self.rollouts.stop),
            Part("canary walks", start=self.walks.start, stop=self.walks.stop),
            Part("local cpu", start=self.local_cpu.start, stop=self.local_cpu.stop),
            Part("name and difficulty models", start=self._warm_names, stop=self._close_names),
            Part("prober", start=self.prober.start, stop=self.prober.stop),
            Part("queue", start=self.queue.connect, stop=self.queue.close),
            Part("job workers", start=self.worker.start, stop=self.worker.stop),
        ]
        if self.loop_lag is not None:
            parts.append(Part("loop lag", start=self.loop_lag.start, stop=self.loop_lag.stop))
        if not self.store.url.startswith("sqlite"):  # a shared store: other replicas exist
            parts.append(Part("replica sync", start=self.replicas.start, stop=self.replicas.stop))
        metrics = self.services.metrics
        if metrics.workers is not None:  # last: its socket tells the parent this one started
            exposed = metrics.workers
            parts.append(
                Part("worker metrics", lambda: exposed.start(metrics.own_exposition), exposed.stop)
            )
        return parts

    async def start(self) -> str | None:
        """Migrate the store, register the local tier, ensure an admin key exists, then start
        the background parts (``_parts``).

        Returns a newly generated admin key (to print once), or None.
        """
        await self.lifecycle.start()
        return self._generated_key

    async def stop(self) -> None:
        """Stop every part in the reverse of the start order; the store closes last."""
        await self.lifecycle.stop()

    def _register_known_nodes(self) -> None:
        """The in-process local tier, and the nodes the settings list (``static_nodes``)."""
        self.registry.add(self.local_node)
        self.registry.add(self.steps_node)
        for registration in self.settings.static_nodes:
            self.registry.add(node_from_registration(registration))

    async def _bootstrap_admin_key(self) -> None:
        """The configured bootstrap key, or a generated one when the store has no admin key."""
        if self.settings.bootstrap_key is not None:
            await self.keys.ensure(
                "bootstrap", {"admin"}, self.settings.bootstrap_key.get_secret_value()
            )
        elif not await self.store.has_admin_key():
            self._generated_key = await self.keys.create("bootstrap", {"admin"}, generate_key())

    async def _close_backends(self) -> None:
        for backend in self.backends.values():
            await backend.aclose()

    async def _warm_names(self) -> None:
        """Start loading the name model and the difficulty scorer in the background (seconds;
        requests that need the name model wait within their deadlines, those that would read
        the difficulty decide without it until it is loaded)."""
        if self.names is not None:
            self.names.warm()
        if self.difficulty is not None:
            self.difficulty.warm()

    def loading(self) -> str | None:
        """Readiness waits for the name model (calls to the public zone would wait for it) and
        for the difficulty scorer (chats would be placed without reading their prompt)."""
        if self.names is not None and not self.names.loaded:
            return "the name model"
        if self.difficulty is not None and not self.difficulty.loaded:
            return "the difficulty model"
        return None

    async def _close_names(self) -> None:
        if self.names is not None:
            self.names.close()
        if self.finder is not None:
            self.finder.close()
        if self.difficulty is not None:
            self.difficulty.close()

    def _budget_policy(self) -> BudgetPolicy:
        """The active policy's budget (read per call: the policy changes while running)."""
        return self.policies.current().policy.budget

    def _answers_policy(self) -> AnswersPolicy:
        """The active policy's answer reuse (read per lookup: the policy changes while running)."""
        return self.policies.current().policy.answers

    def _budget_state(self) -> BudgetState:
        """Global spend and limit in the current period."""
        return self.ledger.state(None, self._budget_policy())


def _admission(settings: Settings) -> Admission:
    """Per-node admission: slots in flight and the queue waiting for one."""
    return Admission(
        max_in_flight=settings.admission_max_in_flight,
        max_queued=settings.admission_max_queued,
        retry_after_s=settings.shed_retry_after_s,
    )


def _retries(settings: Settings) -> Retries:
    """Retries of one deployment and the bound of one try (settings in ms, here in s)."""
    return Retries(
        attempts=settings.retry_attempts,
        base_s=settings.retry_base_ms / 1000.0,
        max_s=settings.retry_max_ms / 1000.0,
        attempt_timeout_s=settings.attempt_timeout_ms / 1000.0 or None,
        adaptive_factor=settings.attempt_timeout_factor,
        adaptive_floor_s=settings.attempt_timeout_floor_ms / 1000.0,
    )
