"""How ``--workers`` should share its port: one socket inherited by every worker, or one
``SO_REUSEPORT`` socket each. Two processes, each on the gateway's own event loop and
listener (``server/listener.py``: ``Loop`` and ``BatchListener``, up to 512 accepts per
wake-up), take bursts of new connections; each accepted connection costs 1 ms of CPU (a
busy gateway) and answers with its process id, so the split is counted per process.

    python -m bench.worker_sockets [--connections 400] [--rounds 3]

Writes bench/results/worker_sockets.json.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import time
from typing import Any

from bench.harness import free_port, write_result
from hybridinfer.server.listener import BatchListener, Loop, bound_sockets

WORK_S = 0.001
BACKLOG = 1024


class Busy(asyncio.Protocol):
    """Spends ``WORK_S`` of CPU per connection, answers its pid, closes."""

    def connection_made(self, transport: Any) -> None:  # uvloop's, no asyncio.Transport
        end = time.perf_counter() + WORK_S
        while time.perf_counter() < end:
            pass
        transport.write(b"%d" % os.getpid())
        transport.close()


def serve(inherited: socket.socket | None, port: int, ready: Any) -> None:
    """One worker: the inherited socket, or its own ``SO_REUSEPORT`` one on ``port``."""
    loop = Loop()
    asyncio.set_event_loop(loop)
    sockets = (
        [inherited] if inherited else bound_sockets("127.0.0.1", port, BACKLOG, reuse_port=True)
    )
    BatchListener(loop, Busy, sockets, None)
    ready.set()
    loop.run_forever()


async def burst(port: int, count: int) -> list[bytes]:
    async def one() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answer = await reader.read()
        writer.close()
        return answer

    return await asyncio.gather(*(one() for _ in range(count)))


def measure(mode: str, connections: int, rounds: int) -> list[dict[str, Any]]:
    inherited = bound_sockets("127.0.0.1", 0, BACKLOG)[0] if mode == "inherited" else None
    port = inherited.getsockname()[1] if inherited else free_port()
    context = multiprocessing.get_context("fork")  # the child inherits the socket as is
    workers = []
    for _ in range(2):
        ready = context.Event()
        worker = context.Process(target=serve, args=(inherited, port, ready))
        worker.start()
        ready.wait()
        workers.append(worker)
    results = []
    try:
        for index in range(rounds):
            started = time.perf_counter()
            pids = asyncio.run(burst(port, connections))
            took_ms = (time.perf_counter() - started) * 1000
            if b"" in pids:
                raise RuntimeError("a connection was closed without its worker's pid")
            split = sorted((pids.count(pid) for pid in set(pids)), reverse=True)
            print(f"  {mode:>9} round {index}: {connections} connections split {split} "
                  f"in {took_ms:.0f} ms", flush=True)  # fmt: skip
            results.append({"round": index, "split": split, "burst_ms": round(took_ms, 1)})
    finally:
        for worker in workers:
            worker.terminate()
            worker.join()
        if inherited:
            inherited.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=400, help="Connections per burst.")
    parser.add_argument("--rounds", type=int, default=3, help="Bursts per way.")
    args = parser.parse_args()
    before = os.getloadavg()
    ways = {
        mode: measure(mode, args.connections, args.rounds) for mode in ("inherited", "reuseport")
    }
    after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before {before}, after {after}; cores {os.cpu_count()}")
    path = write_result(
        "worker_sockets",
        {
            "what": "connections accepted per worker of two, per burst: one inherited socket "
            "vs SO_REUSEPORT each; 1 ms of CPU per connection",
            "connections": args.connections,
            "ways": ways,
            "load_average": {"before": before, "after": after},
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
