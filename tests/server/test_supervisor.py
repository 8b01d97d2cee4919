from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hybridinfer.server.supervisor import Supervised, with_parent_death_signal


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status").read_text()
    return "State:\tZ" not in status


async def test_a_crashed_child_is_restarted_and_stop_ends_it() -> None:
    child = Supervised("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
    await child.start()
    assert child.process is not None
    first = child.process.pid
    os.kill(first, signal.SIGKILL)
    for _ in range(100):
        await asyncio.sleep(0.05)
        if child.restarts == 1:
            break
    assert child.restarts == 1
    assert child.process.pid != first
    await child.stop()
    assert child.process.returncode is not None


def test_children_die_with_their_parent_even_on_sigkill(tmp_path: Path) -> None:
    """A parent that spawns a child the supervised way, then is SIGKILLed: the child goes too."""
    pid_file = tmp_path / "child.pid"
    command = with_parent_death_signal([sys.executable, "-c", "import time; time.sleep(60)"])
    parent_code = (
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen({command!r})\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code])
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    child_pid = int(pid_file.read_text())
    assert alive(child_pid)
    parent.kill()
    parent.wait()
    for _ in range(100):
        if not alive(child_pid):
            break
        time.sleep(0.05)
    assert not alive(child_pid)
