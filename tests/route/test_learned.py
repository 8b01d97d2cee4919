"""The learned router on a small slice of the MMLU outcomes: scores, round-trips, loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridinfer.errors import ConfigError
from hybridinfer.models.embedder import Embedder
from hybridinfer.route.learned import FeatureTable, LearnedRouter, bundled_router_path
from hybridinfer.routertraining.deferral import curve_metrics, deferral_curve
from hybridinfer.routertraining.outcomes import Outcomes
from hybridinfer.routertraining.training import Candidate, fit_router


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
