"""The learned router on a small slice of the MMLU outcomes: scores, round-trips, loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.models.embedder import Embedder
from hybridinfer.route.learned import (
    CHOICE_SETS,
    FeatureTable,
    LearnedRouter,
    bundled_router_path,
    choice_sets,
)
from hybridinfer.routertraining.deferral import curve_metrics, deferral_curve, length_scores
from hybridinfer.routertraining.outcomes import Outcomes, load_outcomes_dir
from hybridinfer.routertraining.training import Candidate, fit_router
from tests.routerdata import router_data


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


def test_bundled_router_ranks_mmlu_above_random_and_length(embedder: Embedder) -> None:
    # 25 prompts of every subject, all seen in training: this proves it loads and ranks
    # sensibly, not how well it generalises (bench/routing.py measures that).
    everything = load_outcomes_dir(router_data())
    groups = np.asarray(everything.groups)
    rng = np.random.default_rng(0)
    keep = np.zeros(len(everything), dtype=bool)
    for subject in sorted(set(everything.groups)):
        keep[rng.choice(np.flatnonzero(groups == subject), 25, replace=False)] = True
    sample = everything.subset(keep)
    router = LearnedRouter.load(bundled_router_path())
    table = FeatureTable.compute(
        sample.prompts,
        embedder,
        embed_words=router.embed_words,
        embed="embedding" in router.features,
        choices=choice_sets(router.features),
    )
    learned = curve_metrics(
        deferral_curve(router.score_features(table), sample.weak, sample.strong)
    )
    length = curve_metrics(
        deferral_curve(length_scores(sample.prompts), sample.weak, sample.strong)
    )
    assert learned["apgr"] is not None
    assert length["apgr"] is not None
    assert learned["apgr"] > 0.55
    assert learned["apgr"] > length["apgr"]


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


def test_structure_features_round_trip_and_are_checked_on_load(
    outcomes: Outcomes, table: FeatureTable, tmp_path: Path
) -> None:
    router = fit_router(table, outcomes, Candidate(("text", "structure"), "gain", 1e-2))
    path = tmp_path / "router.json"
    router.save(path)
    np.testing.assert_allclose(
        LearnedRouter.load(path).score_features(table), router.score_features(table), atol=1e-6
    )
    document = orjson.loads(path.read_bytes())
    document["structure_features"] = document["structure_features"][:-1]
    path.write_bytes(orjson.dumps(document))
    with pytest.raises(ConfigError, match="other structure features"):
        LearnedRouter.load(path)


def test_a_router_without_the_embedding_runs_no_model(
    outcomes: Outcomes, table: FeatureTable
) -> None:
    router = fit_router(table, outcomes, Candidate(("text",), "gain", 1e-1))

    class NoModel:
        def count_tokens(self, texts: list[str]) -> list[int]:
            return [len(text.split()) for text in texts]

        def embed(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("embedded although the router has no embedding features")

    scores = router.score(outcomes.prompts[:3], NoModel())  # type: ignore[arg-type]
    assert scores.shape == (3,)
    bare = FeatureTable.compute(outcomes.prompts[:3], NoModel(), embed=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="without the embedding"):
        bare.matrix(("embedding", "text"))


def test_answer_choice_features_round_trip_and_are_checked_on_load(
    outcomes: Outcomes, embedder: Embedder, tmp_path: Path
) -> None:
    prompts = outcomes.prompts[:40]
    table = FeatureTable.compute(prompts, embedder, embed=False, choices=("choices",))
    assert table.choices is not None
    assert np.abs(table.choices).sum() > 0
    router = fit_router(
        table, outcomes.subset(np.arange(len(outcomes)) < 40), Candidate(("choices",), "gain", 1.0)
    )
    path = tmp_path / "router.json"
    router.save(path)
    # score() computes the answer-choice features itself: the same scores as the table's
    np.testing.assert_allclose(
        LearnedRouter.load(path).score(prompts, embedder), router.score_features(table), atol=1e-5
    )
    document = orjson.loads(path.read_bytes())
    for key, changed in (
        ("choice_features", document["choice_features"][:-1]),
        ("choice_reading", {**document["choice_reading"], "stem_words": 32}),
    ):
        path.write_bytes(orjson.dumps({**document, key: changed}))
        with pytest.raises(ConfigError, match="other answer-choice features"):
            LearnedRouter.load(path)
    with pytest.raises(ConfigError, match="no choices features"):
        FeatureTable.compute(prompts[:2], embedder, embed=False).matrix(("choices",))


def test_a_table_with_stems_holds_each_prompt_without_its_choices(
    outcomes: Outcomes, embedder: Embedder
) -> None:
    prompts = outcomes.prompts[:6]
    table = FeatureTable.compute(prompts, embedder, embed=False, choices=CHOICE_SETS, stems=True)
    assert table.stems is not None
    assert table.stems.choices is not None
    assert table.stems.choicetext is not None
    # the stems have no lettered choices left: no answer-choice signal, fewer words
    assert not table.stems.choices.any()
    assert not table.stems.choicetext.any()
    assert (table.stems.text[:, 1] < table.text[:, 1]).all()
    picked = table.rows(np.asarray([True, False, True, False, False, False]))
    assert picked.stems is not None
    np.testing.assert_array_equal(picked.stems.text, table.stems.text[[0, 2]])


def test_the_trigram_reading_of_the_choices_runs_no_model(outcomes: Outcomes) -> None:
    class NoModel:
        def count_tokens(self, texts: list[str]) -> list[int]:
            return [len(text.split()) for text in texts]

        def embed(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("embedded although the router reads the choices from trigrams")

    prompts = outcomes.prompts[:40]
    table = FeatureTable.compute(prompts, NoModel(), embed=False, choices=("choicetext",))  # type: ignore[arg-type]
    assert table.choicetext is not None
    assert table.choicetext.any()
    assert table.choices is None
    rows = outcomes.subset(np.arange(len(outcomes)) < 40)
    router = fit_router(table, rows, Candidate(("text", "choicetext"), "gain", 1.0))
    np.testing.assert_allclose(
        router.score(prompts, NoModel()),
        router.score_features(table),
        atol=1e-9,  # type: ignore[arg-type]
    )
