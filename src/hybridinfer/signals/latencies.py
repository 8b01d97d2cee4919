"""Recent latencies of each deployment, for the quantiles the executor reads: the hedge's
head start (p95, ``hedge.py``) and the adaptive per-try bound (p99, ``retry.py``)."""

from __future__ import annotations

from collections import deque

MIN_SAMPLES = 20
WINDOW = 128


class LatencyWindows:
    """The last ``WINDOW`` successful latencies per deployment (bounded memory)."""

    def __init__(self, size: int = WINDOW, min_samples: int = MIN_SAMPLES) -> None:
        self._size = size
        self._min_samples = min_samples
        self._by_deployment: dict[str, deque[float]] = {}

    def observe(self, deployment_id: str, latency_ms: float) -> None:
        window = self._by_deployment.get(deployment_id)
        if window is None:
            window = self._by_deployment[deployment_id] = deque(maxlen=self._size)
        window.append(latency_ms)

    def quantile_ms(
        self, deployment_id: str, q: float, min_samples: int | None = None
    ) -> float | None:
        """The ``q`` quantile of the window; None until ``min_samples`` (default: the
        window's) calls were seen."""
        window = self._by_deployment.get(deployment_id)
        needed = self._min_samples if min_samples is None else min_samples
        if window is None or len(window) < needed:
            return None
        ordered = sorted(window)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def p95_ms(self, deployment_id: str) -> float | None:
        return self.quantile_ms(deployment_id, 0.95)
