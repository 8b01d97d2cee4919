"""The routing benchmark's other-benchmark protocol: routers fitted on MMLU, scored on a file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from bench import routing
from hybridinfer.errors import InvalidInput
from hybridinfer.models.embedder import Embedder
from hybridinfer.route.choices import stem_of
from hybridinfer.routertraining.outcomes import Outcomes, load_outcomes_dir
from hybridinfer.routertraining.training import Candidate
from tests.routerdata import router_data

SHIPPED = Candidate(("text", "structure", "choicetext"), "gain", 1e-2, stems=True)
EMBEDDED = Candidate(("embedding", "text"), "gain", 1e-3)


def other_benchmark(folder: Path, rows: int = 60) -> Path:
    """A RouteLLM-shaped file of questions from a subject the training slice lacks, without
    their answer choices, and a contaminated list naming three of them."""
    everything = load_outcomes_dir(router_data())
    picked = np.flatnonzero(np.asarray(everything.groups) == "high_school_geography")[:rows]
    path = folder / "other_responses.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["prompt", "mixtral-8x7b-instruct-v0.1", "gpt-4-1106-preview", "notes"])
        for row in picked:
            prompt = stem_of(everything.prompts[row])
            writer.writerow([prompt, everything.weak[row], everything.strong[row], "a\nnote"])
    with (folder / "contaminated_prompts.jsonl").open("w") as handle:
        for row in picked[:3]:
            handle.write(json.dumps({"eval_prompt": stem_of(everything.prompts[row])}) + "\n")
    return path


def test_every_router_is_fitted_on_mmlu_and_scored_on_the_other_file(
    tmp_path: Path, outcomes: Outcomes, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routing, "CANDIDATES", (SHIPPED, EMBEDDED))
    monkeypatch.setattr(
        routing, "FIXED", {SHIPPED.label: (SHIPPED, "first32"), "previous": (EMBEDDED, "full")}
    )
    tables = routing.feature_tables(outcomes.prompts, embedder, None)
    path = other_benchmark(tmp_path)
    found = routing.run_domain(outcomes, tables, path, embedder, None)
    assert found["rows"] == 57
    assert found["contaminated_dropped"] == 3
    assert found["seen_in_training"] == 0  # stems: not the prompts the routers learned
    assert set(found["summary"]) == {
        "random",
        "length",
        "oracle",
        "chosen",
        SHIPPED.label,
        "previous",
    }
    assert found["weak_quality"] < found["strong_quality"]
    assert set(found["vs_length"]) == {"chosen", SHIPPED.label, "previous"}
    for paired in found["vs_length"].values():
        low, high = paired["ci95"]
        assert low <= paired["apgr_difference"] <= high
        assert paired["verdict"] == ("above" if low > 0 else "below" if high < 0 else "level")
    (fold,) = found["folds"]
    assert fold["chosen_recipe"] in {SHIPPED.label, EMBEDDED.label}
    # one file is one group: within_r is the file's own rank correlation with the gain
    assert fold["oracle"]["within_r"] > 0.9
    assert found["summary"]["oracle"]["within_r"]["mean"] == fold["oracle"]["within_r"]
    assert -1 <= fold["random"]["within_r"] < fold["oracle"]["within_r"]
    difference = found["vs_length"][SHIPPED.label]["apgr_difference"]
    assert difference == pytest.approx(
        fold[SHIPPED.label]["apgr"] - fold["length"]["apgr"], abs=2e-4
    )


def test_a_file_without_a_gap_is_refused_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "flat.csv"
    path.write_text("prompt,weak,strong\nq1,True,True\nq2,False,False\n")
    with pytest.raises(InvalidInput, match="weak and the strong"):
        routing.read_domain(path)  # two True/False columns of equal accuracy: ambiguous
    path.write_text(f"prompt,{routing_weak()},gpt-4-1106-preview\nq1,True,True\nq2,False,False\n")
    with pytest.raises(InvalidInput, match="no gap"):
        routing.read_domain(path)


def routing_weak() -> str:
    return "mixtral-8x7b-instruct-v0.1"
