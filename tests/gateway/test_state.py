"""Handlers reach only their service: ``create_app`` puts each of the plane's services on
``app.state`` by name, and no handler module imports the control plane (house rule 12)."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request

import hybridinfer.gateway
from hybridinfer.control.plane import ControlPlane
from hybridinfer.gateway import state
from hybridinfer.gateway.app import create_app

GATEWAY = Path(hybridinfer.gateway.__file__).parent


def test_each_service_is_on_app_state_and_found_by_its_accessor(plane: ControlPlane) -> None:
    app = create_app(plane)
    request = Request({"type": "http", "app": app})
    for name, service in plane.services.by_name().items():
        assert getattr(state, f"{name}_of")(request) is service, name
    assert state.options_of(request).max_body_bytes == plane.settings.max_body_bytes
    assert not hasattr(app.state, "control_plane")


def test_only_the_app_factory_imports_the_control_plane() -> None:
    importers = sorted(
        path.name
        for path in GATEWAY.glob("*.py")
        if "hybridinfer.control.plane" in path.read_text(encoding="utf-8")
    )
    assert importers == ["app.py"]
