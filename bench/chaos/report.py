"""The scenario table of ``docs/resilience.md`` from ``bench/results/chaos.json``:
``python -m bench.chaos.report``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.chaos.load import RESULTS_FILE

HEADER = (
    "| Scenario | Sent | Succeeded | Degraded | Failed | p50 ms | p99 ms | Time to reroute "
    "| Generator achieved/s (p99 lag) |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"
)


def cell(row: dict[str, Any]) -> str:
    """One table row; latencies run from each request's scheduled time."""
    reroute = "-" if row["reroute_s"] is None else f"{row['reroute_s']:.2f} s"
    generator = row.get("generator") or {}
    pace = (
        f"{generator['achieved_per_s']} of {generator['rate_per_s']} ({generator['lag_p99_ms']} ms)"
        if generator
        else "-"
    )
    return (
        f"| {row['scenario']} | {row['sent']} | {row['succeeded']} | {row.get('degraded', 0)} "
        f"| {row['failed']} | {row['p50_ms']} | {row['p99_ms']} | {reroute} | {pace} |"
    )


def table(path: Path = RESULTS_FILE) -> str:
    stored = json.loads(path.read_text())
    rows = sorted(stored["rows"].values(), key=lambda row: row["scenario"])
    machine = stored["machine"]
    lines = [HEADER, *(cell(row) for row in rows)]
    dates = sorted(row["date"] for row in rows)
    commits = sorted({str(row.get("commit", "unknown")) for row in rows})
    lines.append(
        f"\nRun {dates[0]} to {dates[-1]} at commit {', '.join(commits)} on "
        f"{machine['cores']} cores, {machine['platform']}, Python {machine['python']}; links "
        f"impaired by {stored['impairment']}."
    )
    return "\n".join(lines)


def main() -> None:
    print(table())


if __name__ == "__main__":
    main()
