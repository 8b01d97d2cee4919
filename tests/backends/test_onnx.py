"""The in-process ONNX backend on the bundled sentiment model: quick lone calls run on the
event loop once their size was timed on a thread; the setting's 0 keeps every call on one."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hybridinfer.backends.onnx import OnnxBackend
from hybridinfer.core.topology import Node, Tier, Zone
from hybridinfer.models.catalog import deployment_info, find_model
from hybridinfer.signals.registry import deployment_from_info

TEXT = "the update broke my phone and support never answered"


@pytest.mark.parametrize("inline_below_us", [1_000_000, 0])
async def test_lone_calls_of_a_quick_model_run_on_the_loop_unless_turned_off(
    models_dir: Path, inline_below_us: int
) -> None:
    path, card = find_model(models_dir, "sentiment-small")
    node = Node(
        id="local", tier=Tier.LOCAL, zone=Zone.PRIVATE, url="inproc://local", protocol="onnx"
    )
    deployment = deployment_from_info(node.id, deployment_info(card))
    key = OnnxBackend.key(deployment.model, deployment.version)
    backend = OnnxBackend({key: path}, inline_below_us=inline_below_us)
    threads: list[int] = []
    batcher = backend._batchers[key]
    run = batcher._run

    def noting(feeds):  # type: ignore[no-untyped-def]
        threads.append(threading.get_ident())
        return run(feeds)

    batcher._run = noting
    answers = [await backend.infer(node, deployment, {"text": TEXT}, 5.0) for _ in range(5)]
    await backend.aclose()
    assert len({answer["label"] for answer in answers}) == 1
    assert answers[0]["label"] in deployment.labels
    on_loop = [thread == threading.get_ident() for thread in threads]
    if inline_below_us:  # the first call loads the session and is timed, on a thread
        assert on_loop == [False, True, True, True, True]
    else:
        assert not any(on_loop)
