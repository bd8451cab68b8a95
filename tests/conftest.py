"""Fixtures shared by every test package."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """The folder of real public data sets beside the repository (../shared/data).

    Tests that use it are skipped, with the reason, when it is absent (a clone
    without the shared folder); CI runs them because it clones with shared/ beside.
    """
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent (clone with ../shared)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Keep the developer's data and config directories out of every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("ANNOTATE_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("ANNOTATE_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
