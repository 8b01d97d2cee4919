"""Held-out report of the learned router candidates on RouteLLM's MMLU outcomes.

Three protocols, each scoring every router on the same folds:

- ``subjects``: 5 folds over subject groups (subjects sharing a prompt, after whitespace
  normalisation, are one group: 78 questions are in both ``clinical_knowledge`` and
  ``college_medicine``), so no test question or its duplicate was seen in training;
- ``categories``: each of MMLU's 4 categories (STEM, humanities, social sciences, other) held
  out whole, a larger shift than random subjects;
- ``formats``: the subject folds again, every router trained as before but scored on the test
  prompts with their answer choices removed (``route/choices.py``'s ``stem_of``): a change of
  format like the one to a benchmark of another domain or to chat, where a router that leaned on
  the multiple-choice form (the answer-choice features above all) falls below length.

With ``--domain FILE`` (repeatable), a fourth kind of protocol, ``domain:<file stem>``: every
router fitted on all of MMLU and scored on that file, any CSV ``router eval`` reads (RouteLLM's
GSM8K responses, say), beside random, length and the oracle, each learned row with its APGR less
length's and a 95 % paired bootstrap interval: the held-back benchmark of another domain.

``chosen`` is the protocol's honest figure for the training recipe: in each outer fold the
recipe is selected among ``CANDIDATES`` by robust APGR on inner folds of the *training* groups
only (4 over subject groups, then each category present held out), refitted on them, then
scored once on the test fold. Every other router is one
fixed recipe, fitted per fold: the candidates, the explored alternatives (matrix factorisation,
k nearest neighbours), the recipe shipped before (full-prompt embedding + text statistics,
named ``previous``), and the baselines random, length, oracle (knows the outcomes: the
ceiling) and ``subject-oracle`` (knows each test subject's mean gain of the strong model and
nothing inside a subject: the ceiling of a router whose only signal is which subjects are hard,
which is all any router here has found on MMLU).
Embeddings are of the first 32 words, as the live scorer embeds, unless the name says ``full``.

Writes ``bench/results/routing.json`` and ``bench/results/routing.png``; prints a table.
Run: ``python -m bench.routing [--data-dir DIR] [--models-dir DIR] [--cache-dir DIR]
[--domain FILE ...]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.harness import REPO, RESULTS, write_result
from bench.routingcost import measure_cost
from bench.routingllm import LLM_RECIPES, SAMPLE_SIZE, cost_summary, measure_sample, sample_table
from bench.routingplot import plot
from bench.routingsplits import Folds, category_folds, subject_folds
from hybridinfer.errors import InvalidInput
from hybridinfer.models.embedder import Embedder
from hybridinfer.route.choices import stem_of
from hybridinfer.route.learned import CHOICE_SETS, FeatureTable
from hybridinfer.routertraining.deferral import (
    DeferralCurve,
    FloatArray,
    curve_metrics,
    deferral_curve,
    length_scores,
    oracle_scores,
    paired_apgr_difference,
    random_scores,
    subject_oracle_scores,
    within_group_rank_correlation,
)
from hybridinfer.routertraining.embedding import open_embedder
from hybridinfer.routertraining.fingerprint import prompt_fingerprint, seen_in_training
from hybridinfer.routertraining.neighbours import NeighbourCandidate, fit_neighbours
from hybridinfer.routertraining.outcomes import (
    Outcomes,
    OutcomesFile,
    default_data_dir,
    load_outcomes_dir,
    open_outcomes_csv,
)
from hybridinfer.routertraining.training import (
    CANDIDATES,
    EMBEDDING_FEATURES,
    Candidate,
    Ensemble,
    Recipe,
    fit_router,
    select_candidate,
    split_groups,
)

OUTER_FOLDS = 5
INNER_FOLDS = 4
EMBED_WORDS = 32  # route/difficulty.py's MAX_WORDS: what the live scorer embeds
SHIPPED_BEFORE = Candidate(("embedding", "text"), "gain", 1e-3)
# The ensemble again on full-prompt embeddings: what embedding only 32 words costs.
FULL_ENSEMBLE = Ensemble(
    (Candidate(EMBEDDING_FEATURES, "gain", 1e-4), Candidate(("text",), "gain", 1e-2))
)
SEMANTIC_CHOICES = (
    Candidate(("text", "structure", "choices"), "gain", 1e-2),
    Candidate(("text", "structure", "choices"), "gain", 1e-2, stems=True),
)
# name -> (recipe, which embedding); "chosen" and the baselines are added around these.
FIXED: dict[str, tuple[Recipe | NeighbourCandidate, str]] = {
    **{recipe.label: (recipe, "first32") for recipe in CANDIDATES},
    "mf/" + Candidate(EMBEDDING_FEATURES, "pairwise", 1e-3).label: (
        Candidate(EMBEDDING_FEATURES, "pairwise", 1e-3),
        "first32",
    ),
    NeighbourCandidate(50).label: (NeighbourCandidate(50), "first32"),
    "full/" + FULL_ENSEMBLE.label: (FULL_ENSEMBLE, "full"),
    # The answer choices read by MiniLM: about a point above the trigram reading, at 8-14 ms a
    # prompt (five model runs), over the live budget, so not a training candidate.
    **{recipe.label: (recipe, "first32") for recipe in SEMANTIC_CHOICES},
    "previous": (SHIPPED_BEFORE, "full"),
}
BASELINES = ("random", "length", "oracle", "subject-oracle")
KEYS = ("apgr", "cpt50", "cpt80", "strong_share_at_95", "within_r")
HIGHER_IS_BETTER = ("apgr", "within_r")

Scorer = Callable[[FeatureTable], FloatArray]


def fit_fixed(
    recipe: Recipe | NeighbourCandidate, table: FeatureTable, outcomes: Outcomes
) -> Scorer:
    if isinstance(recipe, NeighbourCandidate):
        return fit_neighbours(table, outcomes, recipe).score_features
    return fit_router(table, outcomes, recipe).score_features


def tested(table: FeatureTable, test: npt.NDArray[np.bool_], shifted: bool) -> FeatureTable:
    """The test rows of ``table``; their stems (choices removed) when the protocol shifts."""
    rows = table.rows(test)
    if not shifted:
        return rows
    if rows.stems is None:
        raise ValueError("the formats protocol needs tables computed with stems")
    return rows.stems


def run_protocol(
    outcomes: Outcomes,
    tables: dict[str, FeatureTable],
    folds: Folds,
    name: str,
    shifted: bool = False,
) -> dict[str, Any]:
    """Every router on every fold of one protocol, with per-router summaries; ``shifted``
    scores the test prompts with their answer choices removed."""
    results: list[dict[str, Any]] = []
    curves: dict[str, list[DeferralCurve]] = {}
    for fold_name, train, test in folds:
        started = time.perf_counter()
        train_outcomes, test_outcomes = outcomes.subset(train), outcomes.subset(test)
        prompts = [stem_of(p) for p in test_outcomes.prompts] if shifted else test_outcomes.prompts
        inner = tables["first32"].rows(train)
        chosen, _ = select_candidate(inner, train_outcomes, folds=INNER_FOLDS)
        scores: dict[str, FloatArray] = {
            "random": random_scores(len(test_outcomes)),
            "length": length_scores(prompts),
            "oracle": oracle_scores(test_outcomes.weak, test_outcomes.strong),
            "subject-oracle": subject_oracle_scores(
                test_outcomes.weak, test_outcomes.strong, test_outcomes.groups
            ),
            "chosen": fit_router(inner, train_outcomes, chosen).score_features(
                tested(tables["first32"], test, shifted)
            ),
        }
        for label, (recipe, embedding) in FIXED.items():
            fitted = fit_fixed(recipe, tables[embedding].rows(train), train_outcomes)
            scores[label] = fitted(tested(tables[embedding], test, shifted))
        fold: dict[str, Any] = {
            "fold": fold_name,
            "test_groups": sorted(set(test_outcomes.groups)),
            "test_rows": len(test_outcomes),
            "chosen_recipe": chosen.label,
            "seconds": 0.0,
        }
        for router, score in scores.items():
            curve = deferral_curve(score, test_outcomes.weak, test_outcomes.strong)
            curves.setdefault(router, []).append(curve)
            fold[router] = scored(curve, score, test_outcomes)
        fold["seconds"] = round(time.perf_counter() - started, 1)
        results.append(fold)
        print(
            f"{name} fold {fold_name}: chose {chosen.label} ({fold['seconds']:.0f} s)", flush=True
        )
    routers = list(curves)
    return {
        "folds": results,
        "summary": {router: summarise([fold[router] for fold in results]) for router in routers},
        "curves": {router: mean_curve(found) for router, found in curves.items()},
    }


def scored(curve: DeferralCurve, scores: FloatArray, outcomes: Outcomes) -> dict[str, Any]:
    """The curve's metrics and ``within_r``: how well the scores order the prompts inside each
    subject, where a one-domain file has all its signal (``within_group_rank_correlation``)."""
    return {
        **curve_metrics(curve),
        "within_r": within_group_rank_correlation(
            scores, outcomes.weak, outcomes.strong, outcomes.groups
        ),
    }


def feature_tables(
    prompts: list[str], embedder: Embedder, cache_dir: Path | None, stems: bool = True
) -> dict[str, FeatureTable]:
    """The two tables every router reads: first 32 words embedded (with the choice sets), and
    whole prompts embedded."""
    return {
        "first32": FeatureTable.compute(
            prompts, embedder, cache_dir, embed_words=EMBED_WORDS, choices=CHOICE_SETS, stems=stems
        ),
        "full": FeatureTable.compute(prompts, embedder, cache_dir, stems=stems),
    }


def read_domain(domain_file: Path) -> OutcomesFile:
    """Another benchmark's outcomes, as ``router eval`` reads them; a file where both models
    are equally good has no gap for a router to recover and is refused."""
    found = open_outcomes_csv(domain_file, drop_contaminated=True)
    if found.outcomes.weak.mean() == found.outcomes.strong.mean():
        raise InvalidInput(f"{domain_file}: both models score the same; no gap to route for")
    return found


def run_domain(
    outcomes: Outcomes,
    tables: dict[str, FeatureTable],
    domain_file: Path,
    embedder: Embedder,
    cache_dir: Path | None,
) -> dict[str, Any]:
    """Every router fitted on all of ``outcomes`` and scored once on ``domain_file``: APGR and
    the rest per router, and each learned router's APGR less length's with its paired
    bootstrap interval (``vs_length``)."""
    started = time.perf_counter()
    found = read_domain(domain_file)
    domain = found.outcomes
    domain_tables = feature_tables(domain.prompts, embedder, cache_dir, stems=False)
    chosen, _ = select_candidate(
        tables["first32"], outcomes, candidates=CANDIDATES, folds=INNER_FOLDS
    )
    scores: dict[str, FloatArray] = {
        "random": random_scores(len(domain)),
        "length": length_scores(domain.prompts),
        "oracle": oracle_scores(domain.weak, domain.strong),
        "chosen": fit_router(tables["first32"], outcomes, chosen).score_features(
            domain_tables["first32"]
        ),
    }
    for label, (recipe, embedding) in FIXED.items():
        scores[label] = fit_fixed(recipe, tables[embedding], outcomes)(domain_tables[embedding])
    fold: dict[str, Any] = {
        "fold": domain_file.stem,
        "test_groups": [domain_file.stem],
        "test_rows": len(domain),
        "chosen_recipe": chosen.label,
    }
    curves: dict[str, list[DeferralCurve]] = {}
    vs_length: dict[str, Any] = {}
    for router, score in scores.items():
        curve = deferral_curve(score, domain.weak, domain.strong)
        curves[router] = [curve]
        fold[router] = scored(curve, score, domain)
        if router not in BASELINES:
            paired = paired_apgr_difference(score, scores["length"], domain.weak, domain.strong)
            if paired is not None:
                vs_length[router] = paired.summary()
    fold["seconds"] = round(time.perf_counter() - started, 1)
    print(f"domain {domain_file.stem}: {len(domain)} prompts ({fold['seconds']:.0f} s)", flush=True)
    return {
        "file": str(domain_file),
        "rows": len(domain),
        "contaminated_dropped": found.contaminated_dropped,
        "unknown_dropped": found.unknown_dropped,
        # every router here is fitted on all of ``outcomes``: a domain prompt among them is
        # scored in-sample (a digest match, as ``router eval`` counts it)
        "seen_in_training": int(
            seen_in_training(prompt_fingerprint(outcomes.prompts), domain.prompts).sum()
        ),
        "weak_quality": round(float(domain.weak.mean()), 4),
        "strong_quality": round(float(domain.strong.mean()), 4),
        "folds": [fold],
        "summary": {router: summarise([fold[router]]) for router in scores},
        "curves": {router: mean_curve(found_curves) for router, found_curves in curves.items()},
        "vs_length": vs_length,
    }


def run_sample_protocol(
    outcomes: Outcomes, table: FeatureTable, llm: FloatArray, sample: Any, folds: Folds
) -> dict[str, Any]:
    """The LLM-signal rows: the same folds, train and test restricted to the sample's rows;
    random, length and the shipped recipe are refitted on the sample beside them."""
    per_fold: dict[str, list[dict[str, float | None]]] = {}
    curves: dict[str, list[DeferralCurve]] = {}
    sampled = sample_table(table, sample, llm)
    sample_outcomes = outcomes.subset(sample)
    for _, train, test in folds:
        train, test = train[sample], test[sample]
        train_outcomes, test_outcomes = sample_outcomes.subset(train), sample_outcomes.subset(test)
        scores: dict[str, FloatArray] = {
            "sample/random": random_scores(len(test_outcomes)),
            "sample/length": length_scores(test_outcomes.prompts),
        }
        for label, recipe in LLM_RECIPES.items():
            fitted = fit_router(sampled.rows(train), train_outcomes, recipe)
            scores[label] = fitted.score_features(sampled.rows(test))
        for router, score in scores.items():
            curve = deferral_curve(score, test_outcomes.weak, test_outcomes.strong)
            curves.setdefault(router, []).append(curve)
            per_fold.setdefault(router, []).append(curve_metrics(curve))
    return {
        "per_fold": per_fold,
        "summary": {router: summarise(found) for router, found in per_fold.items()},
        "curves": {router: mean_curve(found) for router, found in curves.items()},
    }


def add_llm_rows(
    report: dict[str, Any],
    outcomes: Outcomes,
    table: FeatureTable,
    cache_dir: Path,
    size: int,
    cached_only: bool,
) -> None:
    """Measure the LLM signal on the sample (from the cache when computed before) and add its
    rows to the subjects and categories protocols; without llama.cpp or SmolLM2, or with too
    little of the sample cached under --llm-cached-only, say so and add none."""
    from bench.routingllm import sample_mask

    measured, about = measure_sample(outcomes.prompts, cache_dir, size, cached_only)
    if measured is None:
        print(f"LLM signal rows skipped: {about}", flush=True)
        report["llm_signal"] = {"skipped": about}
        return
    sample = sample_mask(len(outcomes), len(measured.seconds))
    groups = np.asarray(split_groups(outcomes))
    splits = {
        "subjects": subject_folds(list(groups), OUTER_FOLDS, seed=0),
        "categories": category_folds(list(groups)),
    }
    for name, folds in splits.items():
        found = run_sample_protocol(outcomes, table, measured.features, sample, folds)
        protocol = report["protocols"][name]
        for index, fold in enumerate(protocol["folds"]):
            for router, metrics in found["per_fold"].items():
                fold[router] = metrics[index]
        protocol["summary"].update(found["summary"])
        protocol["curves"].update(found["curves"])
    report["llm_signal"] = {
        "model": about,
        "sample_rows": int(sample.sum()),
        "sample_weak_quality": round(float(outcomes.weak[sample].mean()), 4),
        "sample_strong_quality": round(float(outcomes.strong[sample].mean()), 4),
        "cost": cost_summary(measured),
    }


def summarise(per_fold: list[dict[str, float | None]]) -> dict[str, Any]:
    """Mean, spread (std), worst and best fold of each metric; ``worst`` is the lowest APGR
    and ``within_r`` and the highest strong shares."""
    summary: dict[str, Any] = {}
    for key in KEYS:
        values = np.asarray([fold[key] for fold in per_fold if fold.get(key) is not None])
        if not len(values):
            continue  # a metric these folds do not report (the LLM sample's rows: no within_r)
        worst = values.min() if key in HIGHER_IS_BETTER else values.max()
        summary[key] = {
            "mean": round(float(values.mean()), 4),
            "std": round(float(values.std()), 4),
            "worst": round(float(worst), 4),
            "per_fold": [round(float(value), 4) for value in values],
        }
    return summary


def mean_curve(curves: list[DeferralCurve]) -> dict[str, list[float]]:
    """Point-wise mean over folds (the points sit at the same score quantiles in each fold)."""
    return {
        "strong_share": np.mean([c.strong_share for c in curves], axis=0).round(4).tolist(),
        "quality": np.mean([c.quality for c in curves], axis=0).round(4).tolist(),
    }


def evaluate(
    data_dir: Path,
    models_dir: Path,
    cache_dir: Path,
    llm_sample: int = SAMPLE_SIZE,
    llm_cached_only: bool = False,
    domains: tuple[Path, ...] = (),
) -> dict[str, Any]:
    for domain_file in domains:  # a bad file fails now, not after the protocols' minutes
        read_domain(domain_file)
    outcomes = load_outcomes_dir(data_dir)
    groups = split_groups(outcomes)
    embedder = open_embedder(models_dir)
    started = time.perf_counter()
    tables = feature_tables(outcomes.prompts, embedder, cache_dir)
    feature_seconds = time.perf_counter() - started
    protocols = {
        "subjects": run_protocol(
            outcomes, tables, subject_folds(groups, OUTER_FOLDS, seed=0), "subjects"
        ),
        "categories": run_protocol(outcomes, tables, category_folds(groups), "categories"),
        "formats": run_protocol(
            outcomes, tables, subject_folds(groups, OUTER_FOLDS, seed=0), "formats", shifted=True
        ),
    }
    for domain_file in domains:
        protocols[f"domain:{domain_file.stem}"] = run_domain(
            outcomes, tables, domain_file, embedder, cache_dir
        )
    report: dict[str, Any] = {
        "data": {
            "rows": len(outcomes),
            "subjects": len(set(outcomes.groups)),
            "split_groups": len(set(groups)),
            "weak_quality": round(float(outcomes.weak.mean()), 4),
            "strong_quality": round(float(outcomes.strong.mean()), 4),
        },
        "protocol": {
            "subjects": f"{OUTER_FOLDS} folds over subject groups (duplicates joined)",
            "categories": "each MMLU category held out whole",
            "formats": "the subject folds, test prompts scored with their answer choices removed",
            **{
                f"domain:{domain_file.stem}": f"every router fitted on all of MMLU, scored on "
                f"{domain_file.name}"
                for domain_file in domains
            },
            "inner_folds": INNER_FOLDS,
            "selection": "chosen: max of inner mean APGR - 0.5 x inner std (inner subject folds, "
            "each also without answer choices, and categories), training groups only",
            "candidates": [recipe.label for recipe in CANDIDATES],
            "embed_words": EMBED_WORDS,
        },
        "feature_seconds": round(feature_seconds, 1),
        "protocols": protocols,
        "cost": measure_cost(outcomes.prompts, embedder),
    }
    add_llm_rows(report, outcomes, tables["first32"], cache_dir, llm_sample, llm_cached_only)
    return report


def print_table(report: dict[str, Any]) -> None:
    for name, protocol in report["protocols"].items():
        header = (
            f"{name:<62} {'APGR':>6} {'±':>6} {'worst':>6} {'CPT50':>6} {'CPT80':>6} "
            f"{'@95%':>6} {'worst':>6}"
        )
        print(header)
        print("-" * len(header))
        for router, summary in protocol["summary"].items():
            apgr, at95 = summary["apgr"], summary["strong_share_at_95"]
            print(
                f"{router:<62} {apgr['mean']:>6.3f} {apgr['std']:>6.3f} {apgr['worst']:>6.3f} "
                f"{summary['cpt50']['mean']:>6.3f} {summary['cpt80']['mean']:>6.3f} "
                f"{at95['mean']:>6.3f} {at95['worst']:>6.3f}"
            )
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--models-dir", type=Path, default=REPO / ".hybridinfer" / "models")
    parser.add_argument("--cache-dir", type=Path, default=REPO / ".hybridinfer" / "cache")
    parser.add_argument(
        "--llm-sample", type=int, default=SAMPLE_SIZE, help="prompts the LLM signal is measured on"
    )
    parser.add_argument(
        "--domain",
        type=Path,
        action="append",
        default=[],
        help="a CSV of another benchmark (router eval's format): every router trained on MMLU, "
        "scored on it (repeatable)",
    )
    parser.add_argument(
        "--llm-cached-only",
        action="store_true",
        help="use only the sample's first prompts already measured by `python -m bench.routingllm`",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        report = evaluate(
            args.data_dir,
            args.models_dir,
            args.cache_dir,
            args.llm_sample,
            args.llm_cached_only,
            tuple(args.domain),
        )
    except InvalidInput as error:
        parser.error(str(error))
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    plot(report, RESULTS / "routing.png")
    path = write_result("routing", report)
    print_table(report)
    print(f"wrote {path} and {RESULTS / 'routing.png'} in {report['total_seconds']} s")


if __name__ == "__main__":
    main()
