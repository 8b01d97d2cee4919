"""Router data: the RouteLLM MMLU folder, without its contaminated prompts."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.routertraining.outcomes import load_outcomes_dir
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
