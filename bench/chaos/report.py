"""The scenario table of ``docs/resilience.md`` from ``bench/results/chaos.json``:
``python -m bench.chaos.report``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.chaos.load import RESULTS_FILE

HEADER = (
    "| Scenario | Sent | Succeeded | Failed | p50 ms | p99 ms | Time to reroute |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
)


def cell(row: dict[str, Any]) -> str:
    reroute = "-" if row["reroute_s"] is None else f"{row['reroute_s']:.2f} s"
    return (
        f"| {row['scenario']} | {row['sent']} | {row['succeeded']} | {row['failed']} "
        f"| {row['p50_ms']} | {row['p99_ms']} | {reroute} |"
    )


def table(path: Path = RESULTS_FILE) -> str:
    stored = json.loads(path.read_text())
    rows = sorted(stored["rows"].values(), key=lambda row: row["scenario"])
    machine = stored["machine"]
    lines = [HEADER, *(cell(row) for row in rows)]
    dates = sorted(row["date"] for row in rows)
    lines.append(
        f"\nRun {dates[0]} to {dates[-1]} on {machine['cores']} cores, {machine['platform']}, "
        f"Python {machine['python']}; links impaired by {stored['impairment']}."
    )
    return "\n".join(lines)


def main() -> None:
    print(table())


if __name__ == "__main__":
    main()
