"""The learned router on a small slice of the MMLU outcomes: trains, scores, round-trips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridinfer.errors import ConfigError, InvalidInput
from hybridinfer.models.embedder import Embedder
from hybridinfer.route.learned import FeatureTable, LearnedRouter, bundled_router_path
from hybridinfer.routertraining.deferral import curve_metrics, deferral_curve
from hybridinfer.routertraining.outcomes import Outcomes, default_data_dir, load_outcomes_dir
from hybridinfer.routertraining.training import Candidate, fit_router, group_folds, train_router

SUBJECTS = 6
ROWS_PER_SUBJECT = 40
QUICK = (
    Candidate(("embedding",), "gain", 1e-3),
    Candidate(("embedding", "text"), "needed", 1e-2),
)


def router_data() -> Path:
    """The MMLU outcomes beside the checkout; missing is a failure under CI, a skip elsewhere."""
    data_dir = default_data_dir()
    if not data_dir.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"router data not found at {data_dir}")
        pytest.skip(f"router data not found at {data_dir}")
    return data_dir


@pytest.fixture(scope="module")
def outcomes() -> Outcomes:
    data_dir = router_data()
    everything = load_outcomes_dir(data_dir)
    chosen = sorted(set(everything.groups))[:SUBJECTS]
    seen: dict[str, int] = {}
    keep = []
    for group in everything.groups:
        seen[group] = seen.get(group, 0) + 1
        keep.append(group in chosen and seen[group] <= ROWS_PER_SUBJECT)
    return everything.subset(np.asarray(keep))


@pytest.fixture(scope="module")
def table(outcomes: Outcomes, embedder: Embedder) -> FeatureTable:
    return FeatureTable.compute(outcomes.prompts, embedder)


def test_the_data_folder_drops_contaminated_prompts() -> None:
    data_dir = router_data()
    everything = load_outcomes_dir(data_dir)
    assert len(everything) == 14_037
    assert len(set(everything.groups)) == 57
    assert everything.strong.mean() == pytest.approx(0.806, abs=0.001)


def test_embeddings_are_unit_length_and_ordered(embedder: Embedder) -> None:
    texts = ["What is 2 + 2?", "Name the capital of France. " * 80, ""]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(1.0, abs=1e-4)
    alone = embedder.embed([texts[1]])[0]
    # One text per run: a vector never depends on what else was embedded with it.
    np.testing.assert_allclose(vectors[1], alone, atol=1e-6)
    assert embedder.count_tokens(texts)[1] == embedder.max_tokens


def test_train_selects_by_held_out_groups_and_writes_a_card(
    outcomes: Outcomes, table: FeatureTable
) -> None:
    router = train_router(table, outcomes, candidates=QUICK, folds=3)
    assert router.card["recipe"]["target"] in {"gain", "needed"}
    assert len(router.card["selection"]["scores"]) == len(QUICK)
    assert set(router.card["metrics"]) == {"apgr", "cpt50", "cpt80", "strong_share_at_95"}
    scores = router.score_features(table)
    assert scores.shape == (len(outcomes),)
    assert np.isfinite(scores).all()


def test_artifact_round_trip_gives_the_same_scores(
    outcomes: Outcomes, table: FeatureTable, embedder: Embedder, tmp_path: Path
) -> None:
    router = fit_router(table, outcomes, Candidate(("embedding", "text"), "gain", 1e-3))
    path = tmp_path / "router.json"
    router.save(path)
    loaded = LearnedRouter.load(path)
    assert [head.predicts for head in loaded.heads] == ["strong_correct", "weak_correct"]
    np.testing.assert_allclose(
        loaded.score_features(table), router.score_features(table), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        loaded.score(outcomes.prompts[:5], embedder), router.score_features(table)[:5], atol=1e-6
    )


def test_group_folds_never_split_a_group(outcomes: Outcomes) -> None:
    groups = np.asarray(outcomes.groups)
    tested = []
    for train, test in group_folds(outcomes.groups, 3):
        assert not set(groups[train]) & set(groups[test])
        tested.extend(groups[test])
    assert sorted(tested) == sorted(outcomes.groups)


def test_bundled_router_beats_random_on_this_slice(outcomes: Outcomes, table: FeatureTable) -> None:
    # The slice was part of its training data, so this only proves it loads and ranks sensibly.
    router = LearnedRouter.load(bundled_router_path())
    summary = curve_metrics(
        deferral_curve(router.score_features(table), outcomes.weak, outcomes.strong)
    )
    assert summary["apgr"] is not None
    assert summary["apgr"] > 0.5


def test_scoring_needs_neither_sklearn_nor_torch(minilm_models_dir: Path) -> None:
    program = (
        "import sys\n"
        "from pathlib import Path\n"
        "from hybridinfer.route.learned import LearnedRouter, bundled_router_path\n"
        "from hybridinfer.routertraining.embedding import open_embedder\n"
        "router = LearnedRouter.load(bundled_router_path())\n"
        f"embedder = open_embedder(Path({str(minilm_models_dir)!r}), router.embedder)\n"
        "print(router.score(['What is 2 + 2?'], embedder)[0])\n"
        "assert 'sklearn' not in sys.modules and 'torch' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert -1.0 <= float(result.stdout) <= 1.0


def test_broken_artifacts_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        LearnedRouter.load(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ConfigError, match="not a readable"):
        LearnedRouter.load(broken)
    other = tmp_path / "other.json"
    other.write_text('{"format": "something-else"}')
    with pytest.raises(ConfigError, match="not a hybridinfer-router"):
        LearnedRouter.load(other)


def test_missing_data_folder_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no responses"):
        load_outcomes_dir(tmp_path)
