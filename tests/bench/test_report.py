"""The benchmark document and figures, written from a small sample of ``latest.json``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from bench.plots import draw_all
from bench.report import context, header, render
from bench.report_gateway import stalls_section

from bench import run_all


def latency(p50: float, p99: float) -> dict[str, float]:
    return {"p50": p50, "p95": (p50 + p99) / 2, "p99": p99}


def fixed(target: str, rate: float, p50: float, p99: float, errors: float = 0.0) -> dict[str, Any]:
    return {
        "target": target,
        "rate": rate,
        "latency_ms": latency(p50, p99),
        "error_rate": errors,
        "generator_cpu": 0.05,
    }


def added(target: str, rate: float, p50: float, p99: float, sustained: bool) -> dict[str, Any]:
    return {"target": target, "rate": rate, "sustained": sustained, **latency(p50, p99)}


def searched(rps: float, failed: float | None) -> dict[str, Any]:
    step = {"rate": rps, "sustained": True, "generator_cpu": 0.2}
    return {"sustained_rps": rps, "first_failed_rps": failed, "steps": [step]}


GATEWAY = {
    "litellm_version": "1.108.7",
    "fixed_rates": [
        fixed("direct", 30, 0.4, 1.0),
        fixed("hybridinfer", 30, 1.1, 4.0),
        fixed("litellm", 30, 14.0, 30.0),
        fixed("direct", 300, 0.4, 2.0),
        fixed("hybridinfer", 300, 1.2, 6.0),
        fixed("litellm", 300, 3000.0, 4800.0, errors=0.3),
    ],
    "added_ms": [
        added("hybridinfer", 30, 0.7, 2.5, True),
        added("litellm", 30, 13.6, 29.0, True),
        added("hybridinfer", 300, 0.4, 2.5, True),
        added("litellm", 300, 2999.6, 4798.0, False),
    ],
    "sustained": {
        "direct": searched(6400, 7680),
        "hybridinfer": searched(640, 960),
        "litellm": searched(40, 60),
    },
}


def spread(mean: float, std: float = 0.04) -> dict[str, Any]:
    return {"mean": mean, "std": std, "worst": mean - std, "per_fold": [mean - std, mean + std]}


def routers(apgr: dict[str, float]) -> dict[str, Any]:
    return {
        name: {
            "apgr": spread(value),
            "cpt50": spread(0.4),
            "cpt80": spread(0.7),
            "strong_share_at_95": spread(0.9 - value / 2),
        }
        for name, value in apgr.items()
    }


ROUTING = {
    "data": {"rows": 14037, "subjects": 57},
    "protocol": {
        "subjects": "5 folds over subject groups",
        "categories": "each MMLU category held out whole",
        "selection": "robust inner APGR",
    },
    "cost": {"router": "text+structure/gain/C=0.01"},
    "protocols": {
        "subjects": {
            "summary": routers(
                {"random": 0.51, "length": 0.57, "text+structure/gain/C=0.01": 0.61, "knn": 0.66}
            )
        },
        "categories": {
            "summary": routers(
                {"random": 0.49, "length": 0.54, "text+structure/gain/C=0.01": 0.53, "knn": 0.5}
            )
        },
    },
}
SAMPLE: dict[str, Any] = {
    "machine": {
        "date": "2026-11-29T23:30:00+00:00",
        "cores": 2,
        "platform": "Linux-test",
        "versions": {"hybridinfer": "0.1.0", "python": "3.11.7", "litellm": "1.108.7"},
    },
    "total_seconds": 840.0,
    "sections": {
        "gateway_overhead": {"title": "Gateway overhead", "status": "ok", "result": GATEWAY},
        "routing": {"title": "MMLU deferral curves", "status": "ok", "result": ROUTING},
        "llm": {"title": "LLM TTFT", "status": "failed", "error": "exit 1"},
        "failover": {
            "title": "Failover on a cloud cut",
            "status": "pending",
            "result": {"status": "pending", "reason": "no cut scenario yet", "rows": {}},
        },
    },
}


def test_each_target_is_stated_with_its_verdict(tmp_path: Path) -> None:
    document = render(SAMPLE, {}, tmp_path / "benchmarks.md")
    lines = document.splitlines()
    row = next(line for line in lines if line.startswith("| hybridinfer added latency at 300"))
    assert "p50 0.40 ms, p99 2.50 ms" in row
    assert row.endswith("**met** |")
    row = next(line for line in lines if line.startswith("| added latency ≤ 1/10"))
    assert "30 RPS" in row
    assert "300 RPS" not in row
    assert row.endswith("**met** |")  # 0.7 <= 1.36 and 2.5 <= 2.9
    row = next(line for line in lines if line.startswith("| sustained rate ≥ 10x"))
    assert "640 vs 40 RPS (16.0x)" in row
    assert row.endswith("**met** |")
    # The shipped recipe is judged, not the best row (knn's 0.66 would pass).
    row = next(line for line in lines if line.startswith("| APGR on held-out MMLU subjects"))
    assert "0.610" in row
    assert row.endswith("**missed** |")
    row = next(line for line in lines if line.startswith("| strong calls at 95 %"))
    assert "59.5%" in row
    assert row.endswith("**missed** |")
    row = next(line for line in lines if line.startswith("| above length with a whole"))
    assert "0.530 vs 0.540" in row
    assert row.endswith("**missed** |")
    assert "| **text+structure/gain/C=0.01** (shipped) | 0.610 ± 0.040 (0.570) |" in document
    assert "Not measured in this run: exit 1." in document
    assert "Not measured in this run: no cut scenario yet." in document
    assert "2 cores" in document
    assert "litellm 1.108.7" in document


def goodput(share: float, bare: int = 0, p99: float = 20.0) -> dict[str, Any]:
    return {
        "offered_rps": 1280.0,
        "sustained_rps": 640.0,
        "answered_per_s": 640.0 * share,
        "goodput_share": share,
        "refused_503": 500,
        "refused_without_retry_after": bare,
        "other_failures": {},
        "p50_ms": 2.0,
        "p99_ms": p99,
        "generator_cpu": 0.3,
    }


@pytest.mark.parametrize(
    ("overload", "met"),
    [
        (goodput(0.95), True),
        (goodput(0.85), False),
        (goodput(0.95, bare=1), False),
        (goodput(0.95, p99=60.0), False),
    ],
)
def test_goodput_at_twice_the_sustained_rate_is_judged_on_each_goal(
    tmp_path: Path, overload: dict[str, Any], met: bool
) -> None:
    sample = copy.deepcopy(SAMPLE)
    sample["sections"]["gateway_overhead"]["result"]["goodput"] = {"hybridinfer": overload}
    document = render(sample, {}, tmp_path / "benchmarks.md")
    row = next(line for line in document.splitlines() if line.startswith("| hybridinfer goodput"))
    assert row.endswith("**met** |" if met else "**missed** |")
    assert "| hybridinfer | 1280/s |" in document
    row = next(line for line in document.splitlines() if line.startswith("| hybridinfer sustained"))
    assert "640 RPS (hybridinfer)" in row
    assert row.endswith("**missed** |")


@pytest.mark.parametrize(("auto_p50", "met"), [(6.4, True), (11.0, False)])
def test_auto_is_reported_beside_the_pinned_model_with_the_routers_own_cost(
    tmp_path: Path, auto_p50: float, met: bool
) -> None:
    sample = copy.deepcopy(SAMPLE)
    gateway = sample["sections"]["gateway_overhead"]["result"]
    gateway["added_ms"] += [
        added("hybridinfer-new", 300, 1.4, 4.0, True),
        added("hybridinfer-auto", 300, 0.9, 3.0, True),
        added("hybridinfer-auto-new", 300, auto_p50, 9.0, True),
        added("hybridinfer-new", 30, 1.5, 4.5, True),
    ]
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    row = next(line for line in lines if line.startswith('| `model: "auto"`'))
    assert f"p50 {auto_p50:.2f} ms, p99 9.00 ms" in row
    assert f"the router's own p50 {auto_p50 - 1.4:.2f} ms over the pinned model" in row
    assert row.endswith("**met** |" if met else "**missed** |")
    assert "| 300 | 0.40 ms / 2.50 ms | 1.40 ms / 4.00 ms | 0.90 ms / 3.00 ms |" in "\n".join(lines)
    assert "| 30 | 0.70 ms / 2.50 ms | 1.50 ms / 4.50 ms | not run | not run |" in lines


def test_without_the_auto_paths_no_auto_figure_is_claimed(tmp_path: Path) -> None:
    document = render(SAMPLE, {}, tmp_path / "benchmarks.md")
    assert '`model: "auto"`' not in document


def test_a_target_missed_at_p99_is_missed(tmp_path: Path) -> None:
    sample = copy.deepcopy(SAMPLE)
    gateway = sample["sections"]["gateway_overhead"]["result"]
    gateway["added_ms"][0]["p99"] = 3.5  # more than a tenth of LiteLLM's 29 ms
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    row = next(line for line in lines if line.startswith("| added latency ≤ 1/10"))
    assert row.endswith("**missed** |")


@pytest.mark.integration
def test_figures_are_drawn_and_linked(tmp_path: Path) -> None:
    figures = draw_all(SAMPLE, tmp_path)
    assert set(figures) == {"gateway_overhead"}
    assert figures["gateway_overhead"].read_bytes().startswith(b"\x89PNG")
    (tmp_path / "docs").mkdir()
    document = render(SAMPLE, figures, tmp_path / "docs" / "benchmarks.md")
    assert "](../gateway_overhead.png)" in document


def test_a_result_of_another_shape_is_said_not_rendered(tmp_path: Path) -> None:
    sample = copy.deepcopy(SAMPLE)
    sample["sections"]["cascade"] = {"title": "Cascades", "status": "ok", "result": {"rows": []}}
    document = render(sample, {}, tmp_path / "benchmarks.md")
    assert "Could not render this section's result: KeyError: 'results'." in document


def test_without_a_sustained_fixed_rate_the_shared_search_rates_are_compared(
    tmp_path: Path,
) -> None:
    sample = copy.deepcopy(SAMPLE)
    gateway = sample["sections"]["gateway_overhead"]["result"]
    for row in gateway["added_ms"]:
        row["sustained"] = row["target"] != "litellm"
    steps = {"direct": (0.5, 2.0), "hybridinfer": (1.0, 3.0), "litellm": (20.5, 42.0)}
    for name, (p50, p99) in steps.items():
        gateway["sustained"][name]["steps"] = [
            {"rate": 10, "sustained": True, "p50_ms": p50, "p99_ms": p99, "generator_cpu": 0.01}
        ]
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    row = next(line for line in lines if line.startswith("| added latency ≤ 1/10"))
    assert "10 RPS: p50 0.50 vs 20.00 ms, p99 1.00 vs 40.00 ms" in row
    assert row.endswith("**met** |")


def test_a_rerun_of_some_sections_replaces_only_those_and_keeps_the_dates() -> None:
    earlier = {
        "machine": {"date": "2026-11-30T10:00:00+00:00", "versions": {"git_commit": "abc1234"}},
        "total_seconds": 900.0,
        "sections": {
            "routing": {"status": "ok", "seconds": 60},
            "gateway_overhead": {"old": 1},
            "llm": {"date": "2026-11-20T10:00:00+00:00", "status": "ok", "seconds": 5},
        },
    }
    rerun = {
        "machine": {"date": "2026-12-02T01:00:00+00:00"},
        "total_seconds": 300.0,
        "sections": {"gateway_overhead": {"date": "2026-12-02T01:00:00+00:00", "new": 1}},
    }
    latest = run_all.merged(rerun, earlier)
    assert latest["sections"]["gateway_overhead"] == rerun["sections"]["gateway_overhead"]
    assert latest["sections"]["routing"]["date"] == "2026-11-30T10:00:00+00:00"
    assert latest["sections"]["routing"]["commit"] == "abc1234"
    # kept from a run before the earlier one: its own date, and no commit borrowed
    assert latest["sections"]["llm"]["date"] == "2026-11-20T10:00:00+00:00"
    assert "commit" not in latest["sections"]["llm"]
    assert list(latest["sections"]) == ["routing", "gateway_overhead", "llm"]
    assert latest["machine"]["date"] == "2026-12-02T01:00:00+00:00"


def test_five_repeated_runs_are_all_reported_with_the_added_tail(tmp_path: Path) -> None:
    sample = copy.deepcopy(SAMPLE)
    run = {"p50_ms": 1.0, "error_rate": 0.0, "error_kinds": {}, "generator_cpu": 0.1}
    sample["sections"]["gateway_overhead"]["result"]["repeats"] = {
        "rate": 300.0,
        "seconds": 20.0,
        "runs": {
            "direct": [{**run, "p99_ms": 1.0 + i} for i in range(5)],
            "hybridinfer": [{**run, "p99_ms": 3.0 + 2 * i} for i in range(5)],
        },
    }
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    assert "| hybridinfer | 3.00 | 5.00 | 7.00 | 9.00 | 11.00 | 0.00% |" in lines
    assert "| hybridinfer added | 2.00 | 3.00 | 4.00 | 5.00 | 6.00 |  |" in lines


def test_a_litellm_that_held_no_rate_gives_a_lower_bound_not_infinity(tmp_path: Path) -> None:
    """LiteLLM under the lowest rate tried is not LiteLLM at 0 RPS: the ratio is a bound."""
    sample = copy.deepcopy(SAMPLE)
    sustained = sample["sections"]["gateway_overhead"]["result"]["sustained"]
    sustained["hybridinfer"] = searched(320, 400)
    steps = [{"rate": rate, "sustained": False} for rate in (70.0, 56.0, 45.0)]
    sustained["litellm"] = {"sustained_rps": 0.0, "first_failed_rps": 70.0, "steps": steps}
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    row = next(line for line in lines if line.startswith("| sustained rate ≥ 10x"))
    assert "320 RPS vs LiteLLM under 45 RPS (it held none of 70, 56, 45): over 7.1x" in row
    assert row.endswith("**missed** |")
    sustained["hybridinfer"] = searched(640, 960)
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    row = next(line for line in lines if line.startswith("| sustained rate ≥ 10x"))
    assert "over 14.2x" in row
    assert row.endswith("**met** |")


def auto_row(
    tmp_path: Path, pinned: tuple[float, float, bool], auto: tuple[float, float, bool]
) -> str:
    """The report's `model: "auto"` target row for new prompts at 300 RPS, given the pinned and
    auto paths' added (p50, p99, held)."""
    sample = copy.deepcopy(SAMPLE)
    sample["sections"]["gateway_overhead"]["result"]["added_ms"] += [
        added("hybridinfer-new", 300, *pinned),
        added("hybridinfer-auto-new", 300, *auto),
    ]
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    return next(line for line in lines if line.startswith('| `model: "auto"`'))


def test_the_routers_own_cost_is_not_read_off_paths_that_did_not_hold(tmp_path: Path) -> None:
    row = auto_row(tmp_path, (978.0, 1200.0, False), (934.0, 1030.0, False))
    assert "over the pinned model" not in row
    assert "not read here: auto and the pinned model did not hold the rate" in row
    assert row.endswith("**missed** |")


def test_an_auto_path_faster_than_the_pinned_one_claims_no_negative_router_cost(
    tmp_path: Path,
) -> None:
    row = auto_row(tmp_path, (67.0, 220.0, True), (58.0, 112.0, True))
    assert "over the pinned model" not in row
    assert "under this run's noise: auto's p50 below the pinned model's 67.00 ms" in row


def profile_run(children_us: float | None) -> dict[str, Any]:
    run: dict[str, Any] = {
        "path": "pinned-chat-unique",
        "rate": 100.0,
        "latency_ms": latency(9.0, 20.0),
        "gateway_cpu_us_per_request": 3000.0,
        "flame_graph": "bench/results/profile-pinned-chat-unique.svg",
        "us_per_request_by_layer": {"pipeline": 3000.0},
    }
    if children_us is not None:
        run["children_cpu_us_per_request"] = children_us
    return run


def test_the_profile_states_the_names_process_cpu_beside_the_gateways() -> None:
    from bench.report_gateway import profile_section

    result = {"load_average": [0.5], "idle_cpu_share_of_core": 0.007, "runs": []}
    shown = "\n".join(profile_section({**result, "runs": [profile_run(2100.0)]}))
    assert "3000 µs of CPU per request in the gateway's process and 2100 µs in its names" in shown
    older = "\n".join(profile_section({**result, "runs": [profile_run(None)]}))
    assert "3000 µs of CPU per request, p50" in older


def local_overhead(added_p50: float, chat_added_p50: float | None) -> dict[str, Any]:
    """A ``bench/overhead.py`` result with the given added p50s (ms)."""
    figures = {"p50": 1.0, "p99": 2.0}
    result: dict[str, Any] = {
        "rounds": 2000,
        "direct_ms": figures,
        "gateway_ms": figures,
        "http_floor_ms": figures,
        "overhead_ms": {"p50": added_p50, "p99": 2.0},
        "server_stage_ms_p50": {"total": 1.0},
        "target": "overhead p50 <= 0.5 ms",
        "target_p50_ms": 0.5,
    }
    if chat_added_p50 is not None:
        result["chat"] = {
            "rounds": 2000,
            "direct_ms": figures,
            "gateway_ms": figures,
            "added_ms": {"p50": chat_added_p50, "p99": 1.9},
            "target_p50_ms": 0.5,
        }
    return result


def unloaded_rows(tmp_path: Path, result: dict[str, Any]) -> list[str]:
    sample = copy.deepcopy(SAMPLE)
    sample["sections"]["local_overhead"] = {"title": "Local", "status": "ok", "result": result}
    lines = render(sample, {}, tmp_path / "benchmarks.md").splitlines()
    return [line for line in lines if "(one request at a time)" in line]


def test_what_one_request_at_a_time_pays_is_judged_against_half_a_millisecond(
    tmp_path: Path,
) -> None:
    local, chat = unloaded_rows(tmp_path, local_overhead(1.46, 1.48))
    assert local.startswith("| local sentiment path added p50 ≤ 0.5 ms")
    assert "p50 1.46 ms, p99 2.00 ms over onnxruntime" in local
    assert local.endswith("**missed** |")
    assert chat.startswith("| pinned chat added p50 ≤ 0.5 ms unloaded")
    assert "p50 1.48 ms, p99 1.90 ms over the upstream directly" in chat
    assert chat.endswith("**missed** |")
    local, chat = unloaded_rows(tmp_path, local_overhead(0.45, 0.5))
    assert local.endswith("**met** |")
    assert chat.endswith("**met** |")


def test_a_result_from_before_the_chat_was_measured_still_renders(tmp_path: Path) -> None:
    (local,) = unloaded_rows(tmp_path, local_overhead(0.45, None))
    assert local.endswith("**met** |")


def test_the_format_shift_is_judged_against_length_where_it_was_measured(tmp_path: Path) -> None:
    assert "choices removed" not in render(SAMPLE, {}, tmp_path / "before.md").split("## ")[0]
    shifted = copy.deepcopy(SAMPLE)
    routing = shifted["sections"]["routing"]["result"]
    routing["protocol"]["formats"] = "the subject folds without their answer choices"
    routing["protocols"]["formats"] = {
        "summary": routers({"random": 0.5, "length": 0.56, "text+structure/gain/C=0.01": 0.58})
    }
    document = render(shifted, {}, tmp_path / "benchmarks.md")
    row = next(line for line in document.splitlines() if "answer choices removed" in line)
    assert "0.580 vs 0.560" in row
    assert row.endswith("**met** |")  # 0.02 above: clearly
    assert "| **text+structure/gain/C=0.01** (shipped) | 0.610 ± 0.040 (0.570) |" in document
    assert "knn | 0.660 ± 0.040 (0.620) | 0.500 ± 0.040 (0.460) | n/a |" in document
    routing["protocols"]["formats"]["summary"]["length"]["apgr"]["mean"] = 0.57  # a tie
    row = next(
        line
        for line in render(shifted, {}, tmp_path / "again.md").splitlines()
        if "answer choices removed" in line
    )
    assert row.endswith("**missed** |")


def test_skipped_llm_rows_are_said_not_rendered(tmp_path: Path) -> None:
    skipped = copy.deepcopy(SAMPLE)
    skipped["sections"]["routing"]["result"]["llm_signal"] = {"skipped": "0 prompts cached"}
    document = render(skipped, {}, tmp_path / "benchmarks.md")
    assert "The local LLM's rows were not measured in this run: 0 prompts cached" in document
    assert "Could not render" not in document


def test_another_benchmark_is_judged_by_the_interval_not_the_two_means(tmp_path: Path) -> None:
    other = copy.deepcopy(SAMPLE)
    routing = other["sections"]["routing"]["result"]
    shipped = "text+structure/gain/C=0.01"
    routing["protocols"]["domain:gsm8k_responses"] = {
        "file": "evals/gsm8k_responses.csv",
        "rows": 1307,
        "contaminated_dropped": 12,
        "weak_quality": 0.62,
        "strong_quality": 0.86,
        "folds": [{"chosen_recipe": "text/gain/C=0.1"}],
        "summary": routers({"random": 0.5, "length": 0.6, shipped: 0.63}),
        "vs_length": {
            shipped: {"apgr_difference": 0.03, "ci95": [-0.01, 0.07], "verdict": "level"}
        },
    }
    document = render(other, {}, tmp_path / "benchmarks.md")
    row = next(line for line in document.splitlines() if "`gsm8k_responses`" in line)
    assert "0.630 vs 0.600, difference +0.030 (-0.010…+0.070)" in row
    assert row.endswith("**missed** |")  # 0.03 above on average, but within the interval
    assert (
        "| **text+structure/gain/C=0.01** (shipped) | 0.630 | +0.030 (-0.010…+0.070), level |"
        in (document)
    )
    assert "| length | 0.600 | — |" in document
    assert "1307 prompts (12 dropped as contaminated)" in document
    routing["protocols"]["domain:gsm8k_responses"]["vs_length"][shipped].update(
        ci95=[0.01, 0.05], verdict="above"
    )
    again = render(other, {}, tmp_path / "again.md")
    row = next(line for line in again.splitlines() if "`gsm8k_responses`" in line)
    assert row.endswith("**met** |")
    # a file of the routers' own training prompts proves nothing about another domain
    routing["protocols"]["domain:gsm8k_responses"]["seen_in_training"] = 40
    in_sample = render(other, {}, tmp_path / "in-sample.md")
    row = next(line for line in in_sample.splitlines() if "`gsm8k_responses`" in line)
    assert "40 of its prompts were trained on: not judged" in row
    assert row.endswith("**missed** |")
    assert "(12 dropped as contaminated; 40 are MMLU prompts, scored in-sample)" in in_sample


def test_a_section_names_the_commit_it_ran_at_and_the_header_says_whose_versions() -> None:
    section = {"date": "2026-12-06T03:49:28+00:00", "commit": "b9b8338", "seconds": 178}
    section["load_average"] = {"before": 0.8, "after": 0.5}
    [line, _] = context(section, 2)
    assert line.startswith("_run 2026-12-06T03:49:28+00:00 at b9b8338; 178 s;")
    [older, _] = context({"date": "2026-12-01T09:56:22+00:00", "seconds": 17}, 2)
    assert older == "_run 2026-12-01T09:56:22+00:00; 17 s, on 2 cores._"
    machine = {"date": "d", "cores": 2, "platform": "p", "versions": {"git_commit": "b9b8338"}}
    lines = header({"machine": machine, "sections": {}})
    assert any(
        line.startswith("- Versions of the newest run: git_commit b9b8338.") for line in lines
    )


def figures(p50: float) -> dict[str, float]:
    """A benchmark's percentiles with ``p50``."""
    return {"p50": p50, "p99": p50 * 3}


def decision_result(shared_p50: float) -> dict[str, Any]:
    """A decision record with only the back-to-back figure."""
    return {
        "deployments": 20,
        "rules": 5,
        "rounds": 3000,
        "target_per_subtask_us": 20.0,
        "shared_plan_1_per_subtask_us": figures(shared_p50),
    }


def test_the_decision_target_holds_only_if_it_holds_once_the_snapshot_has_expired() -> None:
    from bench.report_hotpath import decision_section

    result = decision_result(10.0)
    # a record from before the 5 ms pace was measured: judged back to back, as it was
    assert "**met**" in decision_section(result)[-2]
    result["shared_paced_5ms_plan_1_per_subtask_us"] = figures(140.0)
    lines = decision_section(result)
    assert "140.0 µs at one request per 5 ms" in lines[-2]
    assert "**missed**" in lines[-2]
    assert any("one per 5 ms" in line for line in lines)
    assert "has expired by the next request" in lines[-2]  # a record without its ttl: 5 ms
    result["shared_paced_5ms_plan_1_per_subtask_us"] = figures(18.0)
    result["snapshot_ttl_ms"] = 50.0
    lines = decision_section(result)
    assert "**met**" in lines[-2]
    assert "serves about 10 requests" in lines[-2]


def test_the_decision_s_paced_slowdown_is_stated_beside_a_fixed_piece_s() -> None:
    from bench.report_hotpath import decision_section

    result = decision_result(12.0)
    result["shared_paced_5ms_plan_1_per_subtask_us"] = figures(96.0)
    assert not any("fixed piece" in line for line in decision_section(result))  # older record
    result["control_us"] = {
        "back_to_back": figures(5.0),
        "shared_paced": figures(10.0),
        "shared_paced_5ms": figures(30.0),
    }
    line = next(line for line in decision_section(result) if "fixed piece" in line)
    assert "5.0 µs back to back, 10.0 µs one per ms, 30.0 µs one per 5 ms" in line
    assert "6.0x for it, 8.0x for a decision" in line


def test_node_throughput_shows_where_a_lone_call_ran(tmp_path: Path) -> None:
    from bench.plots import throughput_figure
    from bench.report import throughput_section

    def run(callers: int, inline: bool | None, rate: float) -> dict[str, Any]:
        found = {"max_batch_size": 8, "concurrency": callers, "throughput_per_s": rate}
        found |= {"latency_ms": latency(1.0, 2.0), "errors": 0}
        return found if inline is None else found | {"inline": inline}

    runs = [run(1, True, 1000.0), run(1, False, 800.0), run(32, True, 2000.0)]
    result = {
        "setup": "node",
        "runs": runs,
        "best": runs[2],
        "onnxruntime_alone": {"batch_1_per_s": 5000.0},
        "target_per_s": 1000,
    }
    text = "\n".join(throughput_section(result))
    assert "| 8 | 1 | on the loop | 1000 |" in text
    assert "| 8 | 1 | on a thread | 800 |" in text
    older = result | {"runs": [run(1, None, 900.0)], "best": run(1, None, 900.0)}
    assert "| 8 | 1 | on a thread | 900 |" in "\n".join(throughput_section(older))
    throughput_figure(result, tmp_path / "throughput.png")
    assert (tmp_path / "throughput.png").stat().st_size > 0


def test_the_stalls_table_has_a_row_per_gateway_and_run() -> None:
    def run(index: int, full: int) -> dict[str, Any]:
        return {
            "run": index,
            "latency_ms": {"p50": 1.0, "p99": 5.0},
            "late_probes": {"over_20ms": 0, "over_50ms": 0},
            "collections": {
                "0": {"count": 4, "total_ms": 2.0},
                "2": {"count": full, "total_ms": 20.0 * full},
            },
        }

    result = {
        "rate": 300.0,
        "probe_ms": 10.0,
        "load_average": [0.5, 0.5, 0.5],
        "gateways": {"served": {}, "python-gc-threshold": {"X": "700"}},
        "runs": [run(1, 0)],
        "runs_by_gateway": {"served": [run(1, 0)], "python-gc-threshold": [run(1, 2)]},
    }
    text = "\n".join(stalls_section(result))
    assert "| served | 1 | 1.00 ms | 5.00 ms | 0 | 0 | 4 (2 ms) | 0 (0 ms) |" in text
    assert "| python-gc-threshold | 1 | 1.00 ms | 5.00 ms | 0 | 0 | 6 (42 ms) | 2 (40 ms) |" in text
    assert "Python's own threshold" in text
    older = {k: v for k, v in result.items() if k not in ("runs_by_gateway", "gateways")}
    assert "| served | 1 |" in "\n".join(stalls_section(older))  # a record from before


def test_a_refusal_is_judged_as_the_gateway_serves_it() -> None:
    from bench.report_hotpath import shed_section

    def way(cpu_us: float) -> dict[str, Any]:
        return {"cpu_us": {"median": cpu_us, "min": cpu_us, "max": cpu_us}}

    http = {
        "answered": way(1000.0),
        "shed": way(150.0),
        "shed_share_of_answered_cpu": 0.15,
    }
    asgi = {"answered": way(900.0), "shed": way(20.0), "shed_share_of_answered_cpu": 0.022}
    result = {"block": 250, "asgi": asgi, "http": http}
    # an older record: the app's refusal, the client's share in
    lines = shed_section(result)
    assert "15.0% over HTTP: **missed**" in lines[-2]
    assert "the client's own share included" in lines[0]
    http |= {"shed_early": way(70.0), "shed_early_share_of_answered_cpu": 0.07}
    lines = shed_section(result)
    assert "7.0% over HTTP: **met**" in lines[-2]
    assert "the client in a process of its own" in lines[0]
    assert any("refused by the server's protocol" in line and "70.0" in line for line in lines)


def test_the_two_upstream_clients_are_shown_side_by_side_with_their_ratios() -> None:
    from bench.report_hotpath import upstream_client_section

    def row(instructions: float, cpu_us: float, p50_ms: float) -> dict[str, Any]:
        return {
            "instructions_per_call": instructions,
            "cpu_us": cpu_us,
            "p50_ms": p50_ms,
            "p99_ms": p50_ms * 2,
        }

    result = {
        "what": "one POST",
        "rows": {"aiohttp": row(3787.0, 131.0, 0.18), "httpclient": row(511.0, 41.6, 0.093)},
        "ratios": {"instructions": 7.41, "cpu": 3.15, "p50": 1.94},
    }
    text = "\n".join(upstream_client_section(result))
    assert "| aiohttp | 3787 | 131.0 | 0.180 | 0.360 |" in text
    assert "| httpclient | 511 | 41.6 | 0.093 | 0.186 |" in text
    assert "7.41 times the instructions" in text
    assert "3.15 times its CPU and 1.94 times its round trip" in text


def test_the_pinned_chat_is_counted_beside_the_local_request_layer_by_layer() -> None:
    from bench.report_hotpath import pathwork_section

    local = {
        "what": "POST /v1/infer",
        "requests": 300,
        "instructions_per_request": 1000.0,
        "frames_per_request": 40.0,
        "by_layer": {"execute": 600.0, "model (onnxruntime)": 400.0},
    }
    older = "\n".join(pathwork_section(local))
    assert "| execute | 600 | 60.0% |" in older
    chat = {
        "what": "the chat",
        "instructions_per_request": 1500.0,
        "frames_per_request": 50.0,
        "by_layer": {"execute": 900.0, "backend + upstream client": 600.0},
    }
    text = "\n".join(pathwork_section({**local, "chat": chat}))
    assert "| execute | 600 | 900 | 60.0% |" in text
    assert "| backend + upstream client | 0 | 600 | 40.0% |" in text
    assert "| model (onnxruntime) | 400 | 0 | 0.0% |" in text
    assert "| **total** | **1000** | **1500** |  |" in text
