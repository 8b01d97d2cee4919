"""``hybridinfer models build``: the default build is the four classifiers and the MiniLM
embedder, MiniLM with its own progress lines; without torch it is skipped, said so, not fatal."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hybridinfer.cli import main
from hybridinfer.modelzoo import BUNDLE_NAMES, MODEL_NAMES
from hybridinfer.modelzoo.minilm import NAME as MINILM


def classifiers_only(models_dir: Path, target: Path) -> Path:
    """A models folder holding the four built classifiers (reused as they are), no MiniLM."""
    for name in MODEL_NAMES:
        shutil.copytree(models_dir / name, target / name)
    return target


def built_names(output: str) -> list[str]:
    return [line.split()[0] for line in output.splitlines() if line.strip()]


def test_build_lists_every_default_model(models_dir: Path, minilm_models_dir: Path) -> None:
    result = CliRunner().invoke(main, ["models", "build", "--models-dir", str(minilm_models_dir)])
    assert result.exit_code == 0, result.output
    assert built_names(result.stdout) == list(BUNDLE_NAMES)
    minilm_line = result.stdout.splitlines()[-1]
    assert minilm_line.split()[:3] == [MINILM, "dimension", "384"]
    assert result.stderr == ""  # all reused: no progress, no warning


@pytest.mark.integration
def test_minilm_is_exported_with_its_progress_lines(models_dir: Path, tmp_path: Path) -> None:
    folder = classifiers_only(models_dir, tmp_path / "models")
    result = CliRunner().invoke(main, ["models", "build", "--models-dir", str(folder)])
    assert result.exit_code == 0, result.output
    assert built_names(result.stdout) == list(BUNDLE_NAMES)
    steps = [line for line in result.stderr.splitlines() if MINILM in line]
    assert any(f"exported {MINILM} to ONNX" in line for line in steps), result.stderr
    assert any(f"measured and wrote {MINILM}" in line for line in steps), result.stderr
    assert sorted(p.name for p in (folder / MINILM / "1").iterdir()) == [
        "card.json",
        "model.onnx",
        "tokenizer.json",
    ]


def test_without_torch_minilm_is_skipped_and_said_so(
    models_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = classifiers_only(models_dir, tmp_path / "models")
    monkeypatch.setitem(sys.modules, "torch", None)  # what an install without torch finds
    result = CliRunner().invoke(main, ["models", "build", "--models-dir", str(folder)])
    assert result.exit_code == 0, result.output
    assert built_names(result.stdout) == list(MODEL_NAMES)
    assert f"warning: {MINILM} not built: exporting it needs torch" in result.stderr
    assert "no local summaries or retrieval" in result.stderr
    assert not (folder / MINILM).exists()
