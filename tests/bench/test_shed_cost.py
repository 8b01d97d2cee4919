"""The refusal-cost bench's HTTP client runs in a process of its own and checks every answer:
a block of answers that are not what the way expects fails the run instead of being timed."""

from __future__ import annotations

import pytest
from bench.shed_cost import RemoteClient, floor, serve


async def test_the_remote_client_checks_every_answer_of_a_block() -> None:
    server, task, port = await serve(floor)
    client = await RemoteClient.start()
    try:
        await client.to(port)("floor", 0)  # 503 overloaded with Retry-After: as expected
        with pytest.raises(RuntimeError, match="failed a block of 'answered'"):
            await client.to(port)("answered", 250)  # a 503 where a 200 was due
    finally:
        await client.stop()
        server.should_exit = True
        await task
