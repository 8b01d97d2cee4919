"""One scrape of the shared port reports every worker of ``--workers N``, labelled.

With several workers a scrape of ``GET /metrics`` lands on one of them. So that it still
counts every request, each worker also serves its own exposition on a private Unix socket
(``<data_dir>/workers/<index>.sock``, in a directory only the gateway's user may enter; no
HTTP, the exposition is written and the connection closed), and the scraped worker reads
the others' and merges them all, adding a ``worker`` label to every sample. Sum over
``worker`` for the gateway's totals. ``hybridinfer_worker_up{worker}`` says which workers
answered: one that is restarting is missing from that scrape (its counters restart at zero
with it, as a restarted process's do).

prometheus_client's own multiprocess mode was not used: it needs one process-global
registry and does not carry custom collectors (the control-plane readings of ``metrics.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 1.0
"""A worker that has not answered in this time is left out of the scrape (not waited for)."""
WORKER_LABEL = "worker"

Exposition = Callable[[], Awaitable[bytes]]


class _Families(Collector):
    def __init__(self, families: Sequence[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        yield from self._families


def merge(expositions: Mapping[str, bytes]) -> bytes:
    """The Prometheus text of several expositions, each sample labelled with its key."""
    families: dict[str, Metric] = {}
    for worker, text in expositions.items():
        for family in text_string_to_metric_families(text.decode()):
            merged = families.get(family.name)
            if merged is None:
                merged = Metric(family.name, family.documentation, family.type, family.unit)
                families[family.name] = merged
            for sample in family.samples:
                labels = {**sample.labels, WORKER_LABEL: worker}
                merged.samples.append(sample._replace(labels=labels))
    up = GaugeMetricFamily(
        "hybridinfer_worker_up", "1 for each worker whose metrics this scrape holds.",
        labels=[WORKER_LABEL],
    )  # fmt: skip
    for worker in expositions:
        up.add_metric([worker], 1.0)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families([*families.values(), up]))
    return generate_latest(registry)


def exposition_directory(data_dir: Path) -> Path:
    """Where the workers' private metrics sockets live."""
    return data_dir / "workers"


def socket_path(directory: Path, index: int) -> Path:
    """The private metrics socket of worker ``index``."""
    return directory / f"{index}.sock"


class WorkerExpositions:
    """This worker's private metrics socket, and the merged view of all workers."""

    def __init__(self, directory: Path, index: int, count: int) -> None:
        self._directory = directory
        self.index = index
        self.count = count
        self._server: asyncio.AbstractServer | None = None
        self._own: Exposition | None = None

    async def start(self, own: Exposition) -> None:
        """Serve ``own`` (this worker's unmerged exposition) on the private socket."""
        self._own = own
        self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._directory.chmod(0o700)
        path = socket_path(self._directory, self.index)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # left by this worker's previous life
        self._server = await asyncio.start_unix_server(self._answer, path=str(path))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            socket_path(self._directory, self.index).unlink()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if self._own is not None:
                writer.write(await self._own())
                await writer.drain()
        except (ConnectionError, OSError) as error:
            log.debug("metrics socket reader left: %r", error)
        finally:
            writer.close()

    async def merged(self, own: bytes) -> bytes:
        """Every worker's exposition that answered in time, with ``worker`` labels."""
        others = [index for index in range(self.count) if index != self.index]
        read = await asyncio.gather(*(self._read(index) for index in others))
        expositions = {str(self.index): own}
        expositions.update({str(i): text for i, text in zip(others, read, strict=True) if text})
        return merge(dict(sorted(expositions.items(), key=lambda item: int(item[0]))))

    async def _read(self, index: int) -> bytes | None:
        path = str(socket_path(self._directory, index))
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                reader, writer = await asyncio.open_unix_connection(path)
                try:
                    return await reader.read()
                finally:
                    writer.close()
        except (OSError, TimeoutError) as error:
            log.debug("worker %d's metrics not read: %r", index, error)
            return None
