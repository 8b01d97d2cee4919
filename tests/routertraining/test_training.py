"""Training a learned router on a small slice of the MMLU outcomes: candidates are selected on
held-out groups, which folds never split."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.models.embedder import Embedder
from hybridinfer.route.learned import TEXT_STATISTICS, FeatureTable, LearnedRouter
from hybridinfer.routertraining.fingerprint import seen_in_training
from hybridinfer.routertraining.mmlusubjects import category
from hybridinfer.routertraining.outcomes import Outcomes
from hybridinfer.routertraining.training import (
    Candidate,
    Ensemble,
    LengthPrior,
    cross_validate,
    fit_router,
    group_folds,
    robust_apgr,
    split_groups,
    train_router,
    validation_splits,
)

QUICK = (
    Candidate(("embedding",), "gain", 1e-3),
    Candidate(("embedding", "text"), "needed", 1e-2),
)


def test_train_selects_by_held_out_groups_and_writes_a_card(
    outcomes: Outcomes, table: FeatureTable
) -> None:
    router = train_router(table, outcomes, candidates=QUICK, folds=3)
    assert router.card["recipe"]["target"] in {"gain", "needed"}
    assert len(router.card["selection"]["scores"]) == len(QUICK)
    metrics = router.card["metrics"]
    assert set(metrics) == {"apgr", "cpt50", "cpt80", "strong_share_at_95"} | {
        "apgr_min",
        "apgr_std",
        "robust_apgr",
    }
    assert metrics["robust_apgr"] == pytest.approx(
        metrics["apgr"] - 0.5 * metrics["apgr_std"], abs=2e-4
    )
    assert metrics["apgr_min"] <= metrics["apgr"]
    # the card keeps the training prompts' digests: router eval counts them as in-sample
    assert seen_in_training(router.card["training_data"]["prompts"], outcomes.prompts).all()
    scores = router.score_features(table)
    assert scores.shape == (len(outcomes),)
    assert np.isfinite(scores).all()


def test_group_folds_never_split_a_group(outcomes: Outcomes) -> None:
    groups = np.asarray(outcomes.groups)
    tested = []
    for train, test in group_folds(outcomes.groups, 3):
        assert not set(groups[train]) & set(groups[test])
        tested.extend(groups[test])
    assert sorted(tested) == sorted(outcomes.groups)


def test_duplicates_never_straddle_a_split() -> None:
    prompts = [f"q{i}" for i in range(40)] + ["shared  one", "shared one"]
    groups = [f"s{i % 8}" for i in range(40)] + ["s0", "s5"]
    data = Outcomes(prompts, np.zeros(42, dtype=bool), np.ones(42, dtype=bool), groups)
    split = split_groups(data)
    assert split[-1] == split[-2] == "s0+s5"
    for train, test in group_folds(split, 4):
        assert train[-1] == train[-2]
        assert test[-1] == test[-2]


def test_an_ensemble_artifact_scores_the_mean_of_its_members(
    outcomes: Outcomes, table: FeatureTable
) -> None:
    members = (
        Candidate(("embedding", "text", "structure"), "gain", 1e-3),
        Candidate(("text",), "gain", 1e-1),
    )
    ensemble = fit_router(table, outcomes, Ensemble(members))
    assert ensemble.features == ("embedding", "text", "structure")
    assert len(ensemble.heads) == 4
    expected = np.mean([fit_router(table, outcomes, m).score_features(table) for m in members], 0)
    np.testing.assert_allclose(ensemble.score_features(table), expected, atol=1e-9)


def test_a_length_prior_adds_the_log_length_in_units_of_the_members_spread(
    outcomes: Outcomes, table: FeatureTable, tmp_path: Path
) -> None:
    member = Candidate(("embedding", "text"), "gain", 1e-3)
    base = fit_router(table, outcomes, member).score_features(table)
    log_chars = table.text[:, TEXT_STATISTICS.index("log_chars")]
    for weight in (0.5, 2.0):
        prior = LengthPrior(member, weight)
        router = fit_router(table, outcomes, prior)
        assert prior.label == f"embedding+text/gain/C=0.001 + length x{weight:g}"
        assert router.features == member.features
        assert [head.link for head in router.heads] == ["logistic", "logistic", "identity"]
        added = router.score_features(table) - base
        # exactly linear in log length, centred on the training prompts, at the asked slope
        slope = weight * base.std() / log_chars.std()
        np.testing.assert_allclose(added, slope * (log_chars - log_chars.mean()), atol=1e-9)
    # the linear head survives the artifact, and a link the scorer does not know is refused
    path = tmp_path / "prior.json"
    router.save(path)
    loaded = LearnedRouter.load(path)
    np.testing.assert_allclose(
        loaded.score_features(table), router.score_features(table), rtol=1e-5, atol=1e-6
    )
    document = orjson.loads(path.read_bytes())
    document["heads"][-1]["link"] = "probit"
    path.write_bytes(orjson.dumps(document))
    with pytest.raises(ConfigError, match="unknown link probit"):
        LearnedRouter.load(path)
    with pytest.raises(ValueError, match="reads the text statistics"):
        fit_router(table, outcomes, LengthPrior(Candidate(("embedding",), "gain", 1e-3), 1.0))


def test_pairwise_target_fits_only_where_the_models_disagree(
    outcomes: Outcomes, table: FeatureTable
) -> None:
    router = fit_router(table, outcomes, Candidate(("text",), "pairwise", 1.0))
    [head] = router.heads
    disagree = outcomes.strong != outcomes.weak
    rate = outcomes.strong[disagree].mean()
    assert head.predicts == "strong_wins"
    # An intercept-fitted logistic model matches the base rate on its own training rows.
    mean = head.probability(table.matrix(("text",))[disagree]).mean()
    assert mean == pytest.approx(rate, abs=0.02)


def test_selection_prefers_the_steadier_of_two_equal_means() -> None:
    steady = [{"apgr": 0.6}, {"apgr": 0.6}]
    swinging = [{"apgr": 0.8}, {"apgr": 0.4}]
    assert robust_apgr(steady) == pytest.approx(0.6)
    assert robust_apgr(swinging) == pytest.approx(0.5)


def test_mmlu_groups_are_also_judged_with_each_category_held_out(outcomes: Outcomes) -> None:
    # The slice's subjects are STEM (algebra, astronomy, biology) and other (anatomy, ...).
    splits = list(validation_splits(outcomes, folds=3))
    assert len(splits) == 3 + 2
    groups = np.asarray(outcomes.groups)
    for train, test in splits[3:]:
        assert {category(g) for g in groups[test]} & {category(g) for g in groups[train]} == set()


def test_groups_that_are_not_mmlu_subjects_get_group_folds_only() -> None:
    data = Outcomes(
        [f"q{i}" for i in range(30)],
        np.zeros(30, dtype=bool),
        np.ones(30, dtype=bool),
        [f"file{i % 6}" for i in range(30)],
    )
    assert len(list(validation_splits(data, folds=3))) == 3


def test_a_stems_recipe_trains_on_both_forms_of_every_question(
    outcomes: Outcomes, embedder: Embedder
) -> None:
    table = FeatureTable.compute(outcomes.prompts, embedder, embed=False, stems=True)
    plain = fit_router(table, outcomes, Candidate(("text",), "gain", 1.0))
    both = fit_router(table, outcomes, Candidate(("text",), "gain", 1.0, stems=True))
    assert Candidate(("text",), "gain", 1.0, stems=True).label == "text/gain/C=1/stems"
    # the same rows twice over would fit the same weights; the stems move them
    assert not np.allclose(plain.heads[0].weights, both.heads[0].weights)
    assert table.stems is not None
    twice = FeatureTable(
        embedding=np.vstack([table.embedding, table.stems.embedding]),
        text=np.vstack([table.text, table.stems.text]),
    )
    doubled = outcomes.followed_by(outcomes.prompts)
    np.testing.assert_allclose(
        fit_router(twice, doubled, Candidate(("text",), "gain", 1.0)).heads[0].weights,
        both.heads[0].weights,
        rtol=1e-4,
        atol=1e-6,
    )
    bare = FeatureTable.compute(outcomes.prompts, embedder, embed=False)
    with pytest.raises(ValueError, match="trains on stems"):
        fit_router(bare, outcomes, Candidate(("text",), "gain", 1.0, stems=True))


def test_with_stems_each_group_fold_is_also_scored_without_the_choices(
    outcomes: Outcomes, embedder: Embedder
) -> None:
    table = FeatureTable.compute(outcomes.prompts, embedder, embed=False, stems=True)
    splits = len(list(validation_splits(outcomes, folds=3)))
    with_stems = cross_validate(table, outcomes, Candidate(("text",), "gain", 1.0), folds=3)
    assert len(with_stems) == splits + 3
    bare = FeatureTable.compute(outcomes.prompts, embedder, embed=False)
    without = cross_validate(bare, outcomes, Candidate(("text",), "gain", 1.0), folds=3)
    assert len(without) == splits
    # the group folds as before, each followed by its shifted twin
    assert [with_stems[i] for i in (0, 2, 4)] == without[:3]
    assert with_stems[1] != with_stems[0]
