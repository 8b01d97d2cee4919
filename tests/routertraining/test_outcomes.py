"""Router data: the RouteLLM MMLU folder, without its contaminated prompts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.routertraining.outcomes import (
    Outcomes,
    load_outcomes_dir,
    merge_duplicate_groups,
    normalise_prompt,
    read_outcomes_csv,
)
from tests.routerdata import router_data


def test_the_data_folder_drops_contaminated_prompts() -> None:
    data_dir = router_data()
    everything = load_outcomes_dir(data_dir)
    assert len(everything) == 14_037
    assert len(set(everything.groups)) == 57
    assert everything.strong.mean() == pytest.approx(0.806, abs=0.001)


def test_missing_data_folder_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no responses"):
        load_outcomes_dir(tmp_path)


def test_groups_sharing_a_prompt_are_joined_even_through_a_chain() -> None:
    prompts = ["Same  question?\n", "other", "Same question?", "b only", "b only", "c", "c "]
    groups = ["a", "a", "b", "b", "c", "c", "d"]
    merged = merge_duplicate_groups(prompts, groups)
    # a-b share "Same question?", b-c share "b only", c-d share "c": one group; order kept.
    assert merged == ["a+b+c+d"] * 7
    assert merge_duplicate_groups(["x", "y", "x"], ["p", "q", "p"]) == ["p", "q", "p"]


def test_normalising_only_touches_whitespace() -> None:
    assert normalise_prompt("  What is\t2 +\n 2? ") == "What is 2 + 2?"
    assert normalise_prompt("A") != normalise_prompt("a")


def test_mmlu_duplicates_join_two_medical_subjects() -> None:
    everything = load_outcomes_dir(router_data())
    merged = merge_duplicate_groups(everything.prompts, everything.groups)
    assert len(set(merged)) == 56
    assert {g for g in merged if "+" in g} == {"clinical_knowledge+college_medicine"}


def test_numeric_booleans_are_read(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_text("prompt,weak,strong\nq1,1.0,0.0\nq2,no,yes\n")
    outcomes = read_outcomes_csv(path, "weak", "strong")
    assert outcomes.weak.tolist() == [True, False]
    assert outcomes.strong.tolist() == [False, True]


def test_followed_by_repeats_the_outcomes_for_another_form_of_each_prompt() -> None:
    rows = Outcomes(
        prompts=["q1 A. x B. y", "q2"],
        weak=np.asarray([True, False]),
        strong=np.asarray([False, True]),
        groups=["a", "b"],
    )
    both = rows.followed_by(["q1", "q2"])
    assert both.prompts == ["q1 A. x B. y", "q2", "q1", "q2"]
    assert both.weak.tolist() == [True, False, True, False]
    assert both.strong.tolist() == [False, True, False, True]
    assert both.groups == ["a", "b", "a", "b"]
    with pytest.raises(ValueError, match="one prompt per row"):
        rows.followed_by(["q1"])
