"""The in-process benches' plane is the one a served gateway runs: models loaded, heap frozen."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from bench.inprocess import started_plane


@pytest.mark.integration
async def test_its_models_are_loaded_and_its_start_up_heap_frozen(tmp_path: Path) -> None:
    threshold = gc.get_threshold()
    gc.unfreeze()
    try:
        async with started_plane(tmp_path) as plane:
            assert plane.loading() is None
            assert gc.get_freeze_count() > 10_000  # the plane's modules and models
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
