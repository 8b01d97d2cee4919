"""Charging profile samples to layers: the innermost known frame decides, waits are idle."""

from __future__ import annotations

from bench.profile_gateway import IDLE, fold, layer_of

MAIN = (
    "thread (1): MainThread;<module> (hybridinfer/__main__.py:3);"
    "Runner.run (asyncio/runners.py:118)"
)
WORKER = (
    "thread (2): names;Thread.run (threading.py:982);_worker (concurrent/futures/thread.py:{line})"
)


def test_the_innermost_known_frame_names_the_layer() -> None:
    stack = [*MAIN.split(";"), "AuthMiddleware.__call__ (hybridinfer/gateway/middleware.py:90)"]
    stack.append("KeyStore.check (hybridinfer/control/keys.py:40)")
    assert layer_of(stack) == "control plane (keys, limits, probes)"
    stack.append("sha256 (hashlib.py:1)")  # unknown frames inside a known one
    assert layer_of(stack) == "control plane (keys, limits, probes)"


def test_the_loop_in_native_code_and_threads_waiting_on_queues() -> None:
    assert layer_of(MAIN.split(";")) == "event loop native (epoll, socket I/O)"
    assert layer_of(WORKER.format(line=81).split(";")) == IDLE
    running = [
        *WORKER.format(line=83).split(";"),
        "NameFinder.find (hybridinfer/privacy/ner.py:50)",
    ]
    assert layer_of(running) == "privacy scan"


def test_fold_counts_samples_and_keeps_the_unclaimed_frames() -> None:
    collapsed = "\n".join(
        [
            f"{MAIN};Router.decide (hybridinfer/route/router.py:10) 7",
            f"{MAIN};mystery (somewhere.py:1) 3",
            f"{WORKER.format(line=81)} 90",
        ]
    )
    layers, unclaimed = fold(collapsed)
    assert layers == {"route": 7, "other (interpreter, C, unknown)": 3, IDLE: 90}
    assert unclaimed == {"mystery (somewhere.py:1)": 3}
