"""The key map file (keys.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.errors import InputFileError
from annotate.services.settings import BINDING_IDS, keys_path, load_keymap


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    assert load_keymap(tmp_path / "keys.toml") == {}


def test_config_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANNOTATE_CONFIG_DIR", str(tmp_path))
    assert keys_path() == tmp_path / "keys.toml"


def test_strings_lists_and_keys_table(tmp_path: Path) -> None:
    p = tmp_path / "keys.toml"
    p.write_text('vote-a = "f, a"\nundo = ["z", "backspace"]\n')
    assert load_keymap(p) == {"vote-a": "f,a", "undo": "z,backspace"}
    p.write_text('[keys]\nquit = "ctrl+q"\n')
    assert load_keymap(p) == {"quit": "ctrl+q"}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('vote-a = "f"\nvote-zz = "q"\n', "keys.toml:2: unknown binding id 'vote-zz'"),
        ("vote-a = 3\n", "keys.toml:1: keys for 'vote-a' must be a non-empty string"),
        ('vote-a = ""\n', "must be a non-empty string"),
        ("vote-a = \n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_file_and_line(tmp_path: Path, body: str, expected: str) -> None:
    p = tmp_path / "keys.toml"
    p.write_text(body)
    with pytest.raises(InputFileError) as err:
        load_keymap(p)
    assert expected in str(err.value)


def test_every_documented_id_is_a_binding_of_the_apps() -> None:
    from annotate.app import AnnotateApp
    from annotate.monitor_app import MonitorApp
    from annotate.screens.battle import BattleScreen
    from annotate.screens.monitor import MonitorScreen
    from annotate.screens.pair import PairScreen
    from annotate.screens.report import ReportScreen

    ids = {
        b.id
        for cls in (AnnotateApp, PairScreen, BattleScreen, MonitorApp, MonitorScreen, ReportScreen)
        for klass in cls.__mro__
        for b in klass.__dict__.get("BINDINGS", ())
        if getattr(b, "id", None)
    }
    assert set(BINDING_IDS) <= ids
    import annotate.services.settings as settings

    for binding_id in BINDING_IDS:
        assert binding_id in (settings.__doc__ or "")
