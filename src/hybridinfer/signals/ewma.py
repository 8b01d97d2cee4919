"""Live signals per deployment: EWMA of observed latency and of the error rate, and the outlier
record (``ejection.py``); per node, the window of recent exchanges (``exchanges.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from hybridinfer.signals.ejection import Ejections
from hybridinfer.signals.exchanges import ExchangeWindows


@dataclass(slots=True)
class DeploymentSignal:
    latency_ms: float | None = None
    error_rate: float = 0.0
    calls: int = 0


class Signals:
    """What real calls taught us; the router reads it, the executor writes it."""

    def __init__(
        self,
        alpha: float = 0.2,
        exchanges: ExchangeWindows | None = None,
        ejections: Ejections | None = None,
    ) -> None:
        self._alpha = alpha
        self._by_deployment: dict[str, DeploymentSignal] = {}
        self.exchanges = exchanges or ExchangeWindows()
        """Recent probes and calls per node: the tail the policy reads."""
        self.ejections = ejections or Ejections()
        """Deployments out of routing as outliers against their own record."""

    def observe(self, deployment_id: str, latency_ms: float, ok: bool) -> None:
        signal = self._by_deployment.setdefault(deployment_id, DeploymentSignal())
        alpha = self._alpha
        if ok:
            signal.latency_ms = (
                latency_ms
                if signal.latency_ms is None
                else (1 - alpha) * signal.latency_ms + alpha * latency_ms
            )
        signal.error_rate = (1 - alpha) * signal.error_rate + alpha * (0.0 if ok else 1.0)
        signal.calls += 1

    def latency_ms(self, deployment_id: str, prior_ms: float) -> float:
        signal = self._by_deployment.get(deployment_id)
        if signal is None or signal.latency_ms is None:
            return prior_ms
        return signal.latency_ms

    def error_rate(self, deployment_id: str) -> float:
        signal = self._by_deployment.get(deployment_id)
        return 0.0 if signal is None else signal.error_rate
