"""``hybridinfer gateway --workers N`` without what workers share: one clear line, exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hybridinfer.cli import main


@pytest.mark.parametrize(
    ("config", "missing"),
    [
        ("", "cache: redis"),
        ("cache: redis\n", "a shared store"),
    ],
)
def test_workers_without_shared_state_refuse_to_start_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, missing: str
) -> None:
    for name in ("HYBRIDINFER_STORE_URL", "HYBRIDINFER_CACHE", "HYBRIDINFER_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HYBRIDINFER_REDIS_URL", "redis://127.0.0.1:6379/0")  # not contacted
    config_file = tmp_path / "gateway.yaml"
    config_file.write_text(f"data_dir: {tmp_path}\n{config}")
    result = CliRunner().invoke(main, ["gateway", "--config", str(config_file), "--workers", "2"])
    assert result.exit_code == 1
    assert f"workers: 2 needs what replicas share: {missing}" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "workers").exists()  # nothing was started


def test_the_workers_setting_is_read_from_the_config_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HYBRIDINFER_CACHE", raising=False)
    config_file = tmp_path / "gateway.yaml"
    config_file.write_text(f"data_dir: {tmp_path}\nworkers: 3\n")
    result = CliRunner().invoke(main, ["gateway", "--config", str(config_file)])
    assert result.exit_code == 1
    assert "workers: 3 needs what replicas share" in result.output


async def test_the_heap_is_frozen_again_once_the_background_models_have_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The name and difficulty models load after the server starts; their objects must leave
    the collector's reach too, or every full collection walks them under load."""
    from hybridinfer.cli import serve

    still = ["the name model", "the name model", None]
    freezes: list[int] = []

    class Loading:
        def loading(self) -> str | None:
            return still.pop(0) if len(still) > 1 else still[0]

    monkeypatch.setattr(serve, "LOADED_POLL_S", 0.01)
    monkeypatch.setattr(serve, "freeze_startup_heap", lambda: freezes.append(len(still)))
    await serve._freeze_once_loaded(Loading())  # type: ignore[arg-type]
    assert freezes == [1]  # once, after loading said it was done
