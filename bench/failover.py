"""Failover when the cloud link is cut: time to reroute and failed requests.

The scenarios live in the chaos suite (``tests/chaos``, on the harness in ``bench/chaos``:
nodes in network namespaces, links cut with ``ip``/``tc``); each stores its row in
``bench/results/chaos.json``. This section runs the suite's cut scenarios and keeps the rows
they wrote during this run. Without the suite's scenarios, or without the privileges they need,
it reports the section as pending or failed and says why; it never reuses an older row.

    python -m bench.failover

Writes bench/results/failover.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from bench.harness import REPO, RESULTS, write_result

SUITE = REPO / "tests" / "chaos"
SELECTION = "cut"
"""Scenarios whose test name and stored row name contain this word."""
CUT_CALL = "link.cut("
"""What a scenario file calls to cut a link (``bench/chaos/network.py``)."""


def scenario_files() -> list[str]:
    return sorted(
        str(path.relative_to(REPO))
        for path in SUITE.glob("test_*.py")
        if CUT_CALL in path.read_text()
    )


def fresh_rows(since: float) -> dict[str, Any]:
    """Rows of cut scenarios stored in chaos.json after ``since`` (epoch seconds)."""
    path = RESULTS / "chaos.json"
    if not path.exists():
        return {}
    rows = json.loads(path.read_text()).get("rows", {})
    return {
        name: row
        for name, row in rows.items()
        if SELECTION in name and datetime.fromisoformat(row["date"]).timestamp() >= since - 1
    }


def main() -> None:
    files = scenario_files()
    if not files:
        write_result(
            "failover",
            {
                "status": "pending",
                "reason": "the chaos suite has no cloud-cut scenario yet (tests/chaos)",
                "rows": {},
            },
        )
        print("failover: pending (no cut scenario in tests/chaos)")
        return
    started = datetime.now(UTC).timestamp()
    began = time.perf_counter()
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", SELECTION, *files],
        cwd=REPO,
        env=env,
        check=False,
    )
    rows = fresh_rows(started)
    status = "ok" if finished.returncode == 0 and rows else "failed"
    reason = None
    if finished.returncode != 0:
        reason = f"the cut scenarios failed (pytest exit {finished.returncode})"
    elif not rows:
        reason = "the cut scenarios stored no row (skipped: they need root, ip and tc)"
    write_result(
        "failover",
        {
            "status": status,
            "reason": reason,
            "suite": files,
            "seconds": round(time.perf_counter() - began, 1),
            "rows": rows,
        },
    )
    print(f"failover: {status}, {len(rows)} rows")


if __name__ == "__main__":
    main()
