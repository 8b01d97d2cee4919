"""The child processes `hybridinfer up` runs: they die with it, and come back if they crash.

Children are started through ``setpriv --pdeathsig TERM`` where util-linux provides it, so the
kernel terminates them even when `up` itself is killed with SIGKILL. A supervised child that
exits on its own is restarted with exponential backoff (``backoff.py``: 1 s doubling to 64 s,
reset after a minute of healthy running).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hybridinfer.core.backoff import Backoff

log = logging.getLogger(__name__)

HEALTHY_AFTER_S = 60.0


def with_parent_death_signal(command: Sequence[str]) -> list[str]:
    """``command`` prefixed so the child gets SIGTERM when its parent dies (Linux)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return list(command)
    return [setpriv, "--pdeathsig", "TERM", "--", *command]


async def spawn(command: Sequence[str], **kwargs: Any) -> asyncio.subprocess.Process:
    """Start a child that will not outlive this process."""
    return await asyncio.create_subprocess_exec(*with_parent_death_signal(command), **kwargs)


async def terminate(process: asyncio.subprocess.Process, grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL if it lingers past ``grace_s``."""
    if process.returncode is not None:
        return
    process.terminate()
    try:
        async with asyncio.timeout(grace_s):
            await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()


class Supervised:
    """Keeps one child process running until ``stop``."""

    def __init__(
        self, name: str, command: Sequence[str], env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self._command = list(command)
        self._env = dict(env) if env is not None else None
        self.process: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self._watcher: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self) -> None:
        self.process = await spawn(self._command, env=self._env)
        self._watcher = asyncio.create_task(self._watch(), name=f"supervise-{self.name}")

    async def _watch(self) -> None:
        backoff = Backoff()
        while not self._stopping:
            assert self.process is not None
            started = time.monotonic()
            code = await self.process.wait()
            if self._stopping:
                return
            if time.monotonic() - started > HEALTHY_AFTER_S:
                backoff.reset()
            log.warning(
                "%s exited with %s; restarting in %.0f s", self.name, code, backoff.current_s
            )
            await backoff.wait()
            if self._stopping:
                return
            self.process = await spawn(self._command, env=self._env)
            self.restarts += 1

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop watching, then SIGTERM the child (SIGKILL after ``grace_s``)."""
        self._stopping = True
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self.process is not None:
            await terminate(self.process, grace_s)
