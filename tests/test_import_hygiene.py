"""Architecture: ranking is standalone; store and services never import Textual."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(out.stdout.split())


def test_ranking_imports_only_numpy_scipy_and_stdlib() -> None:
    mods = modules_after("import ranking")
    for forbidden in ("annotate", "textual", "sqlmodel", "sqlalchemy", "pandas", "rich"):
        assert forbidden not in mods, f"import ranking pulled in {forbidden}"


def test_services_and_store_do_not_import_textual() -> None:
    mods = modules_after(
        "import annotate.services.importing, annotate.services.exporting, "
        "annotate.services.voting, annotate.services.arrays, annotate.store.repo"
    )
    assert "textual" not in mods


def test_screens_and_widgets_import_no_store_at_run_time() -> None:
    """Screens name service classes only under ``TYPE_CHECKING`` (the import-linter
    contracts skip those imports): at run time they import no store, SQL or statistics."""
    mods = modules_after(
        "import importlib, pkgutil, annotate.screens, annotate.widgets; "
        "[importlib.import_module(f'{p.__name__}.{m.name}') "
        "for p in (annotate.screens, annotate.widgets) for m in pkgutil.iter_modules(p.__path__)]"
    )
    assert "annotate.screens.vote_base" in mods
    assert "annotate.widgets.monitor_tables" in mods
    for forbidden in (
        "annotate.store",
        "annotate.services.voting",
        "annotate.services.monitoring",
        "sqlmodel",
        "sqlalchemy",
        "ranking",
        "numpy",
    ):
        assert forbidden not in mods, f"a screen or widget pulled in {forbidden}"


def test_import_linter_contracts() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed (it is in the test dependency group)")
    res = subprocess.run([exe], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
