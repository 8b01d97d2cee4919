"""``hybridinfer router eval`` on a CSV it has never seen, and its one-line errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hybridinfer.cli import main
from hybridinfer.routertraining.outcomes import load_outcomes_dir
from tests.routerdata import router_data

ROUTERS = ("random", "length", "learned")
METRICS = {"apgr", "cpt50", "cpt80", "strong_share_at_95"}


def write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def fresh_rows(count: int = 60) -> list[dict[str, str]]:
    rows = []
    for index in range(count):
        hard = index % 3 == 0
        question = (
            f"Let f(x) = {index}x^3 - 7x + {index % 5}. Compute the integral of f from 0 to "
            f"{index % 4 + 1} and reduce the result modulo {index % 7 + 2}."
            if hard
            else f"Which colour is the sky on a clear day number {index}?"
        )
        rows.append(
            {
                "prompt": f"{question}\nA. one\nB. two\nC. three\nD. four\nAnswer:",
                "small": str(not hard and index % 4 != 1),
                "big": str(index % 5 != 2),
            }
        )
    return rows


def run_eval(csv_path: Path, models_dir: Path, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main,
        [
            "router",
            "eval",
            "--data",
            str(csv_path),
            "--weak-col",
            "small",
            "--strong-col",
            "big",
            "--models-dir",
            str(models_dir),
            *extra,
        ],
    )
    return result.exit_code, result.stdout, result.stderr


def test_eval_prints_every_router_and_metric(tmp_path: Path, minilm_models_dir: Path) -> None:
    data = write_csv(tmp_path / "fresh.csv", fresh_rows())
    code, out, _ = run_eval(data, minilm_models_dir)
    assert code == 0
    report = json.loads(out)
    assert report["data"]["rows"] == 60
    for name in ROUTERS:
        assert set(report[name]) == METRICS
        assert all(isinstance(value, float) for value in report[name].values())
    paired = report["learned_vs_length"]
    low, high = paired["ci95"]
    assert low <= paired["apgr_difference"] <= high
    assert paired["apgr_difference"] == pytest.approx(
        report["learned"]["apgr"] - report["length"]["apgr"], abs=2e-4
    )
    expected = "above" if low > 0 else "below" if high < 0 else "level"
    assert paired["verdict"] == expected
    assert paired["resamples"] > 900


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"prompt": "q", "small": "True"}], "missing column(s) 'big'"),
        ([{"prompt": "q", "small": "True", "big": "maybe"}], "must be True or False"),
        ([{"text": "q", "small": "True", "big": "False"}], "missing column(s) 'prompt'"),
    ],
)
def test_bad_csv_is_one_line_and_exit_1(
    tmp_path: Path, minilm_models_dir: Path, rows: list[dict[str, str]], message: str
) -> None:
    data = write_csv(tmp_path / "bad.csv", rows)
    code, out, err = run_eval(data, minilm_models_dir)
    assert code == 1
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_eval_reads_a_routellm_file_without_being_told_its_columns(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    # RouteLLM's GSM8K file names the pair without the organisation and in lower case, keeps
    # each model's multi-line response beside its verdict, and lists contaminated prompts in a
    # contaminated_prompts.jsonl beside it.
    rows = [
        {
            "prompt": row["prompt"].split("\nA.")[0],
            "mixtral-8x7b-instruct-v0.1": row["small"],
            "gpt-4-1106-preview": row["big"],
            "mixtral-8x7b-instruct-v0.1_response": "Step one,\nstep two.\n#### 18",
            "gpt-4-1106-preview_response": "",
        }
        for row in fresh_rows()
    ]
    data = write_csv(tmp_path / "gsm8k_responses.csv", rows)
    (tmp_path / "contaminated_prompts.jsonl").write_text(
        "".join(json.dumps({"eval_prompt": row["prompt"]}) + "\n" for row in rows[:6])
    )
    result = CliRunner().invoke(
        main, ["router", "eval", "--data", str(data), "--models-dir", str(minilm_models_dir)]
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["data"]["rows"] == 54
    assert report["data"]["contaminated_dropped"] == 6
    assert report["data"]["columns_found_by"] == "model name"
    assert report["data"]["weak_column"] == "mixtral-8x7b-instruct-v0.1"
    assert report["data"]["seen_in_training"] == 0  # new questions: no warning
    assert "warning" not in report
    for name in ROUTERS:
        assert set(report[name]) == METRICS
    kept = CliRunner().invoke(
        main,
        [
            "router",
            "eval",
            "--data",
            str(data),
            "--models-dir",
            str(minilm_models_dir),
            "--keep-contaminated",
        ],
    )
    assert json.loads(kept.stdout)["data"]["rows"] == 60


def test_missing_file_and_missing_artifact(tmp_path: Path, minilm_models_dir: Path) -> None:
    code, _, err = run_eval(tmp_path / "nowhere.csv", minilm_models_dir)
    assert code == 1
    assert "no such file" in err
    data = write_csv(tmp_path / "fresh.csv", fresh_rows(10))
    code, _, err = run_eval(data, minilm_models_dir, "--model", str(tmp_path / "none.json"))
    assert code == 1
    assert len(err.strip().splitlines()) == 1


def test_train_rejects_a_folder_without_data(tmp_path: Path, minilm_models_dir: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "router",
            "train",
            "--data-dir",
            str(tmp_path),
            "--out",
            str(tmp_path / "router.json"),
            "--models-dir",
            str(minilm_models_dir),
        ],
    )
    assert result.exit_code == 1
    assert "no responses/*.csv" in result.stderr


def test_eval_reads_json_lines_with_a_prompt_column_of_another_name(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    rows = [
        {"question": row["prompt"], "small": row["small"] == "True", "big": row["big"] == "True"}
        for row in fresh_rows()
    ]
    data = tmp_path / "outcomes.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    code, out, err = run_eval(data, minilm_models_dir, "--prompt-col", "question")
    assert code == 0, err
    report = json.loads(out)
    assert report["data"]["rows"] == len(rows)
    assert (report["data"]["weak_column"], report["data"]["strong_column"]) == ("small", "big")
    for name in ROUTERS:
        assert set(report[name]) == METRICS


def test_eval_warns_when_the_file_holds_the_routers_training_prompts(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    # the bundled router's training prompts: MMLU without its contaminated prompts
    trained = load_outcomes_dir(router_data())
    mixed = [
        {"prompt": trained.prompts[row], "small": str(trained.weak[row]),
         "big": str(trained.strong[row])}
        for row in range(0, 3000, 100)
    ] + fresh_rows(20)  # fmt: skip
    data = write_csv(tmp_path / "mixed.csv", mixed)
    code, out, err = run_eval(data, minilm_models_dir)
    assert code == 0, err
    report = json.loads(out)
    assert report["data"]["seen_in_training"] == 30  # MMLU: what the bundled router learnt
    assert report["warning"].startswith("30 of 50 prompts were in the learned router's")
    assert "in-sample" in err
