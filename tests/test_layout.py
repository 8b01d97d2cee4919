"""The house rules a command can see: layers and forbidden imports (import-linter), module
sizes, the flat modules, and one exception tree. Run by `make check` and with every test run.

The contracts live in pyproject.toml; the violation tests copy the package, add one import
that breaks a rule, and prove that `lint-imports` fails on it and names it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hybridinfer
from hybridinfer.errors import HybridInferError

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "src" / "hybridinfer"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
MAX_MODULE_LINES = 600
MAX_FLAT_MODULES = 6
"""Besides ``__init__.py`` and ``__main__.py``: the leaves everything may import."""


def source_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def run_lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the package under ``root/src``, with the project's contracts."""
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(REPO / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_package_keeps_its_import_contracts() -> None:
    result = run_lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout
    assert "KEPT" in result.stdout


@pytest.mark.parametrize(
    ("module", "source", "names"),
    [
        pytest.param(
            "core/upward.py",
            "from hybridinfer.gateway import app\n",
            [
                "hybridinfer.core is not allowed to import hybridinfer.gateway",
                "hybridinfer.core.upward",
            ],
            id="lower layer imports a higher one",
        ),
        pytest.param(
            "node/reach.py",
            "from hybridinfer.gateway import middleware\n",
            ["A node process runs without the gateway", "hybridinfer.node.reach"],
            id="node imports the gateway",
        ),
        pytest.param(
            "route/run.py",
            "from hybridinfer.execute import executor\n",
            [
                "hybridinfer.route is not allowed to import hybridinfer.execute",
                "hybridinfer.route.run",
            ],
            id="route imports execute",
        ),
        pytest.param(
            "signals/ewma_echo.py",
            "from hybridinfer.signals import breaker\n",
            ["No cycles are allowed in hybridinfer.signals", ".ewma_echo -> .breaker"],
            id="cycle inside a package",
        ),
    ],
)
def test_the_contracts_fail_on_a_violation(
    tmp_path: Path, module: str, source: str, names: list[str]
) -> None:
    shutil.copytree(
        PACKAGE, tmp_path / "src" / "hybridinfer", ignore=shutil.ignore_patterns("*.pyc")
    )
    (tmp_path / "src" / "hybridinfer" / module).write_text(source)
    if module.startswith("signals/"):  # close the loop: breaker imports the new module back
        breaker = tmp_path / "src" / "hybridinfer" / "signals" / "breaker.py"
        breaker.write_text(breaker.read_text() + "\nfrom hybridinfer.signals import ewma_echo\n")
    result = run_lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout
    for name in names:
        assert name in result.stdout, result.stdout


def test_no_module_passes_the_size_bound() -> None:
    sizes = {p.relative_to(PACKAGE): len(p.read_text().splitlines()) for p in source_modules()}
    too_long = {str(path): lines for path, lines in sizes.items() if lines > MAX_MODULE_LINES}
    assert not too_long, f"split these modules by concept (over {MAX_MODULE_LINES} lines)"


def test_only_a_few_modules_stay_flat() -> None:
    flat = sorted(
        p.name for p in PACKAGE.glob("*.py") if p.name not in {"__init__.py", "__main__.py"}
    )
    assert len(flat) <= MAX_FLAT_MODULES, flat


def test_every_error_class_is_in_the_one_tree() -> None:
    for info in pkgutil.walk_packages(hybridinfer.__path__, "hybridinfer."):
        if "migrations" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, HybridInferError) and value.__module__ == info.name:
                assert info.name == "hybridinfer.errors", f"{info.name}.{name} is an error class"


def test_the_tree_drawn_in_errors_is_the_tree_in_code() -> None:
    from hybridinfer import errors

    drawn = errors.__doc__ or ""
    for _, value in inspect.getmembers(errors, inspect.isclass):
        if issubclass(value, HybridInferError):
            assert f"{value.__name__} ({value.status_code} " in drawn, value.__name__
