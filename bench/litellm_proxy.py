"""LiteLLM's proxy as the comparison gateway: its own venv, one worker, on the bench upstream.

Pinned to ``litellm[proxy]==1.108.7``: the newest ``[proxy]`` extra does not resolve, and
1.82.7/1.82.8 were compromised releases, so the version is never left to the resolver. The venv
lives in ``~/.cache/hybridinfer/litellm-venv`` and is built on first use (a few minutes).

The proxy runs as LiteLLM documents a lean deployment: no database (no ``DATABASE_URL``), a
master key (it refuses to start without one), no callbacks, telemetry off, logging at ERROR,
one uvicorn worker. Retries and cool-downs are off: after an overloaded step the router would
otherwise bench its only deployment for a minute and fail every request of the next one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.processes import server_process

VERSION = "1.108.7"
REQUIREMENT = f"litellm[proxy]=={VERSION}"
VENV = Path.home() / ".cache" / "hybridinfer" / "litellm-venv"
CONFIG = """\
model_list:
  - model_name: {model}
    litellm_params:
      model: openai/{model}
      api_base: {api_base}
      api_key: bench-upstream-key
litellm_settings:
  telemetry: false
  set_verbose: false
  callbacks: []
  success_callback: []
  failure_callback: []
  request_timeout: 30
  num_retries: 0
router_settings:
  disable_cooldowns: true
  num_retries: 0
general_settings:
  disable_spend_logs: true
  disable_error_logs: true
  master_key: {master_key}
"""


def executable() -> Path:
    return VENV / "bin" / "litellm"


def installed_version() -> str | None:
    python = VENV / "bin" / "python"
    if not executable().exists() or not python.exists():
        return None
    found = subprocess.run(
        [str(python), "-c", "from importlib.metadata import version; print(version('litellm'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or None


def ensure_installed(log: Path) -> str:
    """The pinned LiteLLM in its venv (installed when missing or at another version)."""
    found = installed_version()
    if found == VERSION:
        return found
    print(f"installing {REQUIREMENT} into {VENV} (log: {log}) ...", flush=True)
    with log.open("w") as output:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        pip = [str(VENV / "bin" / "pip"), "install", "--quiet"]
        subprocess.run([*pip, "--upgrade", "pip"], stdout=output, stderr=output, check=True)
        subprocess.run([*pip, REQUIREMENT], stdout=output, stderr=output, check=True)
    found = installed_version()
    if found != VERSION:
        raise RuntimeError(f"LiteLLM {VERSION} wanted, {found} installed")
    return found


@contextmanager
def litellm_proxy(
    work_dir: Path, port: int, upstream_url: str, model: str, master_key: str
) -> Iterator[str]:
    """LiteLLM's proxy on ``port``, one model on the upstream; yields its base URL.

    It refuses to start without a master key, so one is set (requests present it, as they
    present an API key to hybridinfer).
    """
    config = work_dir / "litellm.yaml"
    config.write_text(
        CONFIG.format(model=model, api_base=f"{upstream_url}/v1", master_key=master_key)
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DATABASE_URL", "LITELLM_", "REDIS_", "OPENAI_"))
    }
    env |= {"LITELLM_LOG": "ERROR", "LITELLM_TELEMETRY": "False", "NUM_WORKERS": "1"}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch of the price list at start
    command = [str(executable()), "--config", str(config), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--num_workers", "1"]
    url = f"http://127.0.0.1:{port}"
    log = work_dir / "litellm.log"
    with server_process(command, f"{url}/health/liveliness", "LiteLLM proxy", log, env):
        warm(url, model, master_key)
        yield url


def warm(url: str, model: str, master_key: str) -> None:
    """One completion through the proxy before measuring (its first call loads lazily)."""
    body = b'{"model": "' + model.encode() + b'", "messages": [{"role": "user", "content": "hi"}]}'
    request = urllib.request.Request(
        f"{url}/v1/chat/completions",
        body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {master_key}"},
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
