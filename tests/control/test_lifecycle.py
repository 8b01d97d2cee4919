"""``Lifecycle``: parts start in list order and stop in reverse, sync and async steps alike."""

from __future__ import annotations

from hybridinfer.control.lifecycle import Lifecycle, Part


async def test_parts_start_in_order_and_stop_in_reverse() -> None:
    calls: list[str] = []

    async def open_store() -> None:
        calls.append("store up")

    async def close_store() -> None:
        calls.append("store down")

    lifecycle = Lifecycle(
        [
            Part("store", start=open_store, stop=close_store),
            Part("nodes", start=lambda: calls.append("nodes up")),  # nothing to stop
            Part("cache", stop=lambda: calls.append("cache down")),  # nothing to start
            Part(
                "workers",
                start=lambda: calls.append("workers up"),
                stop=lambda: calls.append("workers down"),
            ),
        ]
    )

    await lifecycle.start()
    assert calls == ["store up", "nodes up", "workers up"]
    calls.clear()
    await lifecycle.stop()
    assert calls == ["workers down", "cache down", "store down"]
