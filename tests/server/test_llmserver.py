"""The llama.cpp server's command line: what each flag is for (the servers themselves run in
``tests/llm/``)."""

from __future__ import annotations

from pathlib import Path

from hybridinfer.core.schemas import DeploymentInfo
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.server.llmserver import LlmServer, LlmSpec


def test_the_command_queues_a_second_request_instead_of_cutting_the_first() -> None:
    info = DeploymentInfo(model="m", version="1", capability="chat", quality=0.3, latency_ms=1)
    spec = LlmSpec("n", "m", Path("/models/m.gguf"), Tier.LOCAL, Zone.PRIVATE, info, "gemma")
    command = LlmServer(spec, 18000, threads=1, context_tokens=2048).command()
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert command[1:3] == ["-m", "llama_cpp.server"]
    assert flags["--interrupt_requests"] == "false"
    assert (flags["--model"], flags["--port"], flags["--chat_format"]) == (
        "/models/m.gguf",
        "18000",
        "gemma",
    )
