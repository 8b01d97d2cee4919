"""Router data: the RouteLLM MMLU folder, without its contaminated prompts."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.routertraining.outcomes import (
    Outcomes,
    OutcomesFile,
    load_outcomes_dir,
    merge_duplicate_groups,
    normalise_prompt,
    open_outcomes_csv,
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


GSM8K_SHAPED = (
    "prompt,mixtral-8x7b-instruct-v0.1,gpt-4-1106-preview,"
    "mixtral-8x7b-instruct-v0.1_response,gpt-4-1106-preview_response\n"
    'Ducks lay 16 eggs a day. How many in a week?,True,True," 16 * 7 = 112.\n#### 112","112"\n'
    '"A robe takes 2 bolts, and half that much white. Total?",False,True,"3\n\n","It takes 3."\n'
    "Sprints: 3 a day for 60 m. Meters a week?,False,False,,\n"
)


def test_routellm_columns_are_found_by_model_name_in_any_case(tmp_path: Path) -> None:
    path = tmp_path / "gsm8k_responses.csv"
    path.write_text(GSM8K_SHAPED)
    table = open_outcomes_csv(path)
    assert (table.weak_column, table.strong_column) == (
        "mixtral-8x7b-instruct-v0.1",
        "gpt-4-1106-preview",
    )
    assert table.found_by == "model name"
    assert table.outcomes.prompts[1] == "A robe takes 2 bolts, and half that much white. Total?"
    assert table.outcomes.weak.tolist() == [True, False, False]
    assert table.outcomes.strong.tolist() == [True, True, False]


def test_two_unnamed_columns_the_more_accurate_is_the_strong_model(tmp_path: Path) -> None:
    path = tmp_path / "pair.csv"
    path.write_text("prompt,answer,big,small\nq1,x,True,False\nq2,y,True,True\nq3,z,0,0\n")
    table = open_outcomes_csv(path)
    assert (table.weak_column, table.strong_column, table.found_by) == (
        "small",
        "big",
        "accuracy",
    )
    # Naming one of the two settles the other, whatever the accuracies.
    named = open_outcomes_csv(path, strong_column="small")
    assert (named.weak_column, named.strong_column, named.found_by) == ("big", "small", "given")


@pytest.mark.parametrize(
    "text",
    [
        "prompt,a,b\nq1,True,False\nq2,False,True\n",  # equally accurate
        "prompt,a,b,c\nq1,True,False,True\n",  # three candidates
        "prompt,a,b\nq1,True,maybe\n",  # one True/False column
    ],
)
def test_columns_it_cannot_tell_apart_ask_to_be_named(tmp_path: Path, text: str) -> None:
    path = tmp_path / "unclear.csv"
    path.write_text(text)
    with pytest.raises(InvalidInput, match="--weak-col and --strong-col"):
        open_outcomes_csv(path)


def test_tab_separated_with_a_byte_order_mark_and_a_capitalised_prompt(tmp_path: Path) -> None:
    path = tmp_path / "scores.tsv"
    path.write_bytes(
        "\ufeffPrompt\tMistralai/mixtral-8x7B-instruct-v0.1\tGPT-4-1106-preview\n"
        "What, exactly?\tyes\tno\n\n".encode()
    )
    table = open_outcomes_csv(path)
    assert table.outcomes.prompts == ["What, exactly?"]
    assert table.outcomes.weak.tolist() == [True]
    assert table.outcomes.strong.tolist() == [False]


def test_contaminated_prompts_beside_the_file_are_dropped_on_request(tmp_path: Path) -> None:
    path = tmp_path / "gsm8k_responses.csv"
    path.write_text(GSM8K_SHAPED)
    beside = tmp_path / "contaminated_prompts.jsonl"
    beside.write_text(
        '{"eval_prompt": "Ducks lay 16 eggs a day. How many in a week?", "train": "x"}\n\n'
    )
    assert len(open_outcomes_csv(path).outcomes) == 3
    beside.write_bytes(b"\xef\xbb\xbf" + beside.read_bytes())  # a byte-order mark is read too
    table = open_outcomes_csv(path, drop_contaminated=True)
    assert table.contaminated_dropped == 1
    assert table.outcomes.weak.tolist() == [False, False]
    beside.write_text('{"prompt": "no eval_prompt key"}\n')
    with pytest.raises(InvalidInput, match=r"contaminated_prompts.jsonl:1: .*eval_prompt"):
        open_outcomes_csv(path, drop_contaminated=True)


def test_an_mmlu_responses_file_finds_the_contaminated_list_one_level_up() -> None:
    subject = router_data() / "responses" / "mmlu_machine_learning.csv"
    kept = open_outcomes_csv(subject)
    table = open_outcomes_csv(subject, drop_contaminated=True)
    # the folder lists 5 contaminated prompts, one of them in this subject
    assert table.contaminated_dropped == 1
    assert len(table.outcomes) == len(kept.outcomes) - table.contaminated_dropped
    everything = load_outcomes_dir(router_data())
    assert len(table.outcomes) == everything.groups.count("machine_learning")


def test_rows_without_a_recorded_outcome_are_left_out_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "gaps.csv"
    path.write_text(
        "prompt,small,big\nq1,True,False\nq2,,True\nq3,False,NaN\nq4,False,True\nq5,0,1\n"
    )
    table = open_outcomes_csv(path)
    # the pair is still told apart by accuracy over the recorded rows only
    assert (table.weak_column, table.strong_column) == ("small", "big")
    assert table.unknown_dropped == 2
    assert table.outcomes.prompts == ["q1", "q4", "q5"]
    assert table.outcomes.weak.tolist() == [True, False, False]
    assert table.outcomes.strong.tolist() == [False, True, True]
    path.write_text("prompt,small,big\nq1,,True\nq2,none,False\n")
    with pytest.raises(InvalidInput, match="no row records both"):
        open_outcomes_csv(path, "small", "big")
    # a column with nothing recorded is not taken for a model's outcomes
    path.write_text("prompt,notes,small,big\nq1,,True,True\nq2,,False,True\n")
    assert open_outcomes_csv(path).weak_column == "small"


def test_a_file_not_in_utf8_is_read_as_a_windows_export(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("prompt,small,big\n“Café” — déjà vu?,True,False\n".encode("cp1252"))
    table = open_outcomes_csv(path)
    assert table.encoding == "cp1252"
    assert table.outcomes.prompts == ["“Café” — déjà vu?"]
    path.write_bytes("prompt,small,big\nCafé,True,False\n".encode())
    assert open_outcomes_csv(path).encoding == "utf-8"


ROWS = [
    ("What is 2 + 2?", True, True),
    ('A "quoted" question;\nover two lines, with a comma?', False, True),
    ("q3", False, False),
    ("q4", True, True),
]
"""A small file's content: (prompt, weak right, strong right)."""


def _expect_rows(table: OutcomesFile) -> None:
    assert (table.weak_column, table.strong_column) == ("small", "big")
    assert table.outcomes.prompts == [prompt for prompt, _, _ in ROWS]
    assert table.outcomes.weak.tolist() == [weak for _, weak, _ in ROWS]
    assert table.outcomes.strong.tolist() == [strong for _, _, strong in ROWS]


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_a_file_separated_by_any_common_sign_is_read(tmp_path: Path, delimiter: str) -> None:
    path = tmp_path / "outcomes.csv"
    with path.open("w", newline="") as sink:
        writer = csv.writer(sink, delimiter=delimiter)
        writer.writerow(["prompt", "small", "big"])
        writer.writerows([(p, str(w).upper(), str(s)) for p, w, s in ROWS])
    _expect_rows(open_outcomes_csv(path))


def test_json_lines_a_json_array_and_gzip_are_read(tmp_path: Path) -> None:
    records = [{"prompt": p, "small": w, "big": s} for p, w, s in ROWS]
    lines = tmp_path / "outcomes.jsonl"
    lines.write_text("\n".join(json.dumps(record) for record in records) + "\n\n")
    _expect_rows(open_outcomes_csv(lines))
    array = tmp_path / "outcomes.json"
    array.write_text(json.dumps(records, indent=2))
    _expect_rows(open_outcomes_csv(array))
    packed = tmp_path / "outcomes.csv.gz"
    with gzip.open(packed, "wt", newline="") as sink:
        writer = csv.writer(sink)
        writer.writerow(["prompt", "small", "big"])
        writer.writerows(ROWS)
    _expect_rows(open_outcomes_csv(packed))


def test_a_utf16_spreadsheet_export_is_read(tmp_path: Path) -> None:
    path = tmp_path / "unicode.txt"
    text = "prompt\tsmall\tbig\n" + "".join(f"Café {n}\tTrue\tFalse\n" for n in range(3))
    path.write_bytes(text.encode("utf-16"))  # with its byte-order mark, as a spreadsheet saves
    table = open_outcomes_csv(path)
    assert table.encoding == "utf-16"
    assert table.outcomes.prompts == ["Café 0", "Café 1", "Café 2"]


def test_bad_json_records_are_refused_by_where_they_are(tmp_path: Path) -> None:
    path = tmp_path / "outcomes.jsonl"
    path.write_text('{"prompt": "q1", "small": true, "big": false}\n\n{"prompt": "q2", "small"\n')
    with pytest.raises(InvalidInput, match="not readable JSON"):
        open_outcomes_csv(path)
    path.write_text('{"prompt": "q1", "small": true, "big": false}\n\n[1, 2]\n')
    with pytest.raises(InvalidInput, match="line 3: each record must be a JSON object"):
        open_outcomes_csv(path)
    path.write_text('{"prompt": "q1", "small": true, "big": false, "x": {"a": 1}}\n')
    with pytest.raises(InvalidInput, match="line 1: column 'x' holds a nested value"):
        open_outcomes_csv(path)
    path.write_text('{"prompt": "q1", "small": true, "big": false}\n{"prompt": "q2", "small": '
                    '"maybe", "big": false}\n')  # fmt: skip
    with pytest.raises(InvalidInput, match="line 2: column 'small' must be True or False"):
        open_outcomes_csv(path, "small", "big")


def test_a_prompt_column_of_another_name_is_named(tmp_path: Path) -> None:
    path = tmp_path / "outcomes.csv"
    path.write_text("question,small,big\nq1,True,False\nq2,False,True\nq3,False,True\n")
    with pytest.raises(InvalidInput, match=r"missing column.*'prompt'.*--prompt-col"):
        open_outcomes_csv(path)
    table = open_outcomes_csv(path, prompt_column="question")
    assert table.outcomes.prompts == ["q1", "q2", "q3"]


def test_a_bad_value_is_refused_by_its_spreadsheet_row(tmp_path: Path) -> None:
    path = tmp_path / "outcomes.csv"
    # a blank line is skipped but still counted: row numbers are the file's own
    path.write_text("prompt,small,big\nq1,True,False\n\nq3,perhaps,True\n")
    with pytest.raises(InvalidInput, match="row 4: column 'small'"):
        open_outcomes_csv(path, "small", "big")


def test_a_folder_is_refused_with_a_file_to_name_instead(tmp_path: Path) -> None:
    (tmp_path / "responses").mkdir()
    (tmp_path / "responses" / "mmlu_x.csv").write_text("prompt,small,big\nq,True,False\n")
    with pytest.raises(InvalidInput, match=r"a folder, not a file; .* responses/mmlu_x\.csv"):
        open_outcomes_csv(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInput, match=r"a folder, not a file; name one file in it$"):
        open_outcomes_csv(tmp_path / "empty")


def test_a_cut_or_corrupt_gzip_file_is_refused_in_one_line(tmp_path: Path) -> None:
    whole = gzip.compress(b"prompt,small,big\n" + b"q,True,False\n" * 2000)
    path = tmp_path / "outcomes.csv.gz"
    path.write_bytes(whole[: len(whole) // 2])  # cut short
    with pytest.raises(InvalidInput, match="not a readable gzip file"):
        open_outcomes_csv(path)
    path.write_bytes(whole[:10] + b"\xff" * 40 + whole[50:])  # its deflate stream corrupt
    with pytest.raises(InvalidInput, match="not a readable gzip file"):
        open_outcomes_csv(path)
