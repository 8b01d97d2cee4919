from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest

from hybridinfer.backends.inprocess import InProcessBackend, LocalOperation
from hybridinfer.core.topology import Node, Tier, Zone
from hybridinfer.errors import DeadlineExceeded, UpstreamError
from hybridinfer.privacy.pseudonym import redact_step, restore_step


def slow(inputs: Mapping[str, Any]) -> dict[str, Any]:
    time.sleep(0.3)
    return {}


@pytest.fixture
def backend() -> tuple[InProcessBackend, Node]:
    operations = [
        LocalOperation("redactor", "redact", redact_step),
        LocalOperation("restorer", "restore", restore_step),
        LocalOperation("slow", "sleep", slow, blocking=True),
    ]
    node = Node("steps", Tier.LOCAL, Zone.PRIVATE, "inproc://steps", "inproc")
    node.deployments = [operation.deployment(node.id) for operation in operations]
    return InProcessBackend(operations), node


async def test_redact_then_restore(backend: tuple[InProcessBackend, Node]) -> None:
    steps, node = backend
    redactor, restorer, _ = node.deployments
    redacted = await steps.infer(node, redactor, {"text": "mail a@b.io"}, 1.0)
    assert redacted["text"] == "mail <EMAIL_1>"
    assert "a@b.io" not in repr(redacted["pseudonyms"])
    restored = await steps.infer(
        node, restorer, {"text": "to <EMAIL_1>", "pseudonyms": redacted["pseudonyms"]}, 1.0
    )
    assert restored == {"text": "to a@b.io"}


async def test_blocking_operation_keeps_the_deadline(
    backend: tuple[InProcessBackend, Node],
) -> None:
    steps, node = backend
    with pytest.raises(DeadlineExceeded):
        await steps.infer(node, node.deployments[2], {}, 0.05)


async def test_unknown_operation(backend: tuple[InProcessBackend, Node]) -> None:
    steps, node = backend
    other = LocalOperation("missing", "redact", redact_step).deployment(node.id)
    with pytest.raises(UpstreamError):
        await steps.infer(node, other, {}, 1.0)
