"""User settings: the key map, and the last annotator name typed.

The name typed on the welcome screen is remembered in ``last_annotator`` beside
``keys.toml`` and offered the next time (:func:`last_annotator`).

The app's keys can be remapped in a TOML file, ``keys.toml``, in the
configuration directory: ``$ANNOTATE_CONFIG_DIR`` when set, otherwise
platformdirs' ``user_config_dir("annotate")`` (on Linux
``~/.config/annotate/keys.toml``). Each entry maps a binding id to one key or
to several keys separated by commas; the new keys replace the default ones.
Keys use Textual's names: letters and digits as themselves, ``space``,
``enter``, ``escape``, ``tab``, ``left``, ``right``, ``up``, ``down``,
``f1``..``f12``, ``ctrl+x`` and so on. Example::

    # keys.toml: vote with f / j as well as the digits, skip with space
    vote-first-harder = "1,f"
    vote-second-harder = "2,j"
    vote-skip = "0,space"
    vote-a = "a,f"
    vote-b = "b,j"
    quit = "ctrl+q"

The text panes are scrollable with the arrow keys, Home, End, Page Up and
Page Down, so those keys are best left to them.

Binding ids and their default keys:

======================  =======  ==============================================
id                      default  action
======================  =======  ==============================================
vote-first-harder       1        difficulty study: the first question is harder
vote-second-harder      2        difficulty study: the second question is harder
vote-skip               0        difficulty study: cannot judge (skip)
choose-subjects         s        difficulty study: opt out of subjects
vote-a                  a        arena: response A is better
vote-b                  b        arena: response B is better
vote-tie                t        arena: tie
vote-both-bad           x        arena: both are bad
undo                    u        undo the last vote (its item comes back)
history                 h        your votes in this study; change an earlier one
comment-item            c        leave a one-line comment on this item
flag-item               f        flag this item as broken
full-text               v        read the item's texts in full, page by page
studies                 escape   back to the list of studies
help                    ?        show the keys
quit                    q        quit (votes are already saved)
pick-study              s        monitor: watch another study
refresh                 r        monitor: refit now
alignment-report        a        monitor: the human-alignment report (difficulty)
close-report            escape   report: back
reload-report           r        report: recompute from the current votes
======================  =======  ==============================================

A missing file means the defaults. A file that cannot be read, or that names
an unknown binding id, is reported (file, line, what is wrong) and the
defaults are used.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from annotate.errors import AnnotateError, InputFileError

BINDING_IDS: dict[str, str] = {
    "vote-first-harder": "1",
    "vote-second-harder": "2",
    "vote-skip": "0",
    "choose-subjects": "s",
    "vote-a": "a",
    "vote-b": "b",
    "vote-tie": "t",
    "vote-both-bad": "x",
    "undo": "u",
    "history": "h",
    "comment-item": "c",
    "flag-item": "f",
    "full-text": "v",
    "studies": "escape",
    "help": "question_mark",
    "quit": "q",
    # annotate monitor
    "pick-study": "s",
    "refresh": "r",
    "alignment-report": "a",
    # the report screen
    "close-report": "escape",
    "reload-report": "r",
}
"""Every remappable binding id and its default key."""


def config_dir() -> Path:
    """Where ``keys.toml`` lives (``$ANNOTATE_CONFIG_DIR`` or the per-user config dir)."""
    env = os.environ.get("ANNOTATE_CONFIG_DIR")
    if env:
        return Path(env)
    from platformdirs import user_config_path

    return user_config_path("annotate", appauthor=False)


def keys_path() -> Path:
    """The key map file."""
    return config_dir() / "keys.toml"


def _line_of(raw: str, key: str) -> int | None:
    for number, line in enumerate(raw.splitlines(), start=1):
        stripped = line.strip().strip('"').strip("'")
        if stripped.startswith(key):
            return number
    return None


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """Read the key map: binding id -> comma-separated keys.

    Raises
    ------
    InputFileError
        The file is not valid TOML, names an unknown binding id, or maps an id
        to something other than a non-empty string or list of strings.
    """
    path = path or keys_path()
    if not path.is_file():
        return {}
    raw = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as err:
        raise InputFileError(
            path, f"not valid TOML: {err}", expected='lines like vote-a = "a"'
        ) from err
    table = data.get("keys", data) if isinstance(data.get("keys"), dict) else data
    keymap: dict[str, str] = {}
    for key, value in table.items():
        line = _line_of(raw, key)
        if key not in BINDING_IDS:
            raise InputFileError(
                path,
                f"unknown binding id {key!r}",
                line=line,
                expected="one of " + ", ".join(BINDING_IDS),
            )
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = ",".join(value)
        if not isinstance(value, str) or not value.strip():
            raise InputFileError(
                path,
                f"keys for {key!r} must be a non-empty string, got {value!r}",
                line=line,
                expected='a key name or several separated by commas, e.g. "left,1"',
            )
        keymap[key] = ",".join(k.strip() for k in value.split(",") if k.strip())
    return keymap


def user_keymap(override: dict[str, str] | None) -> tuple[dict[str, str], AnnotateError | None]:
    """The key map an app applies: ``override`` if given, else ``keys.toml``.

    A broken ``keys.toml`` gives the defaults (an empty map) and the error, for
    the app to show; it never stops the app from starting.
    """
    if override is not None:
        return override, None
    try:
        return load_keymap(), None
    except AnnotateError as err:
        return {}, err


def last_annotator_path() -> Path:
    """The file that remembers the last annotator name (beside ``keys.toml``)."""
    return config_dir() / "last_annotator"


def last_annotator() -> str:
    """The name typed at the last launch, or ``""`` (never an error: it is only a default)."""
    try:
        raw = last_annotator_path().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    name = " ".join(raw.split())[:64]
    return name if name.isprintable() else ""


def remember_annotator(name: str) -> None:
    """Remember ``name`` for the next launch; a folder that cannot be written is ignored."""
    path = last_annotator_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name + "\n", encoding="utf-8")
    except OSError:
        pass
