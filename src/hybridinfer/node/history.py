"""The node's own request history: which models it served most, so it can preload them.

Counts per model name, saved as JSON in the node's cache directory on every heartbeat tick and
at shutdown; at start the node loads the most requested models first (``ModelRepository.preload``)
so the first requests after a restart do not pay for a cold session.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import orjson

log = logging.getLogger("hybridinfer.node")


class RequestHistory:
    """Request counts by model name, persisted to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.counts: Counter[str] = Counter()
        try:
            data = orjson.loads(path.read_bytes())
            self.counts.update({str(k): int(v) for k, v in dict(data).items()})
        except FileNotFoundError:
            pass
        except (orjson.JSONDecodeError, TypeError, ValueError):
            log.warning("ignoring unreadable request history %s", path)

    def record(self, name: str) -> None:
        self.counts[name] += 1

    def most_requested(self, limit: int) -> list[str]:
        return [name for name, _ in self.counts.most_common(limit)]

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_bytes(orjson.dumps(dict(self.counts)))
        temporary.replace(self.path)
