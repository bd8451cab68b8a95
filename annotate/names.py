"""Names and text from files, made safe for every output.

One module, imported by screens, the command line, the importers and the
report writers (it imports nothing of the application, so everyone may):

- :func:`sanitize` shows text literally: control characters, escape sequences,
  bidirectional overrides and line separators become visible placeholders, so
  no name, title or text from a file can restyle a terminal, set its title,
  write to its clipboard or move its cursor.
- :func:`one_line` does the same for names and titles shown in one cell or
  message: newlines and tabs become placeholders too.
- :func:`check_study_name` is the rule for study names: a safe identifier, so a
  name can also be a folder name under the folder the user chose.
- :func:`normalize_annotator` is the rule for annotator names: trimmed,
  printable and case-normalised, so ``"Alice "`` and ``"alice"`` are one person.

Sanitising keeps:

- C0 controls (U+0000 to U+001F except newline and tab) and DEL as their
  Unicode control pictures (``\\x1b`` is shown as ``␛``, ``\\r`` as ``␍``);
- C1 controls (U+0080 to U+009F), bidirectional overrides and isolates
  (U+202A to U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C), the line and
  paragraph separators (U+2028, U+2029) and lone surrogates as ``⟨U+XXXX⟩``.

Everything else, including right-to-left script, emoji and combining marks,
is kept as it is.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "STUDY_NAME_RULE",
    "InvalidNameError",
    "check_study_name",
    "normalize_annotator",
    "one_line",
    "sanitize",
]

_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _placeholder(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"⟨U+{code:04X}⟩"


_TABLE: dict[int, str] = {
    code: _placeholder(code)
    for code in (
        *range(0x20),
        0x7F,
        *range(0x80, 0xA0),
        *_BIDI,
        0x2028,
        0x2029,
        *range(0xD800, 0xE000),
    )
    if code not in (0x09, 0x0A)
}
_LINE_TABLE: dict[int, str] = {**_TABLE, 0x09: "\u2409", 0x0A: "\u2424"}


def sanitize(text: str) -> str:
    """``text`` with every control character replaced by a visible placeholder.

    Newlines and tabs are kept (use :func:`one_line` for a name or a cell).

    Examples
    --------
    >>> sanitize("red \\x1b[31m, bell \\x07, tab\\tand\\nnewline")
    'red ␛[31m, bell ␇, tab\\tand\\nnewline'
    >>> sanitize("[bold]stays[/]")
    '[bold]stays[/]'
    """
    return text.translate(_TABLE)


def one_line(text: object) -> str:
    """``str(text)`` sanitised for one line: newlines and tabs become ``␤`` and ``␉`` too.

    Examples
    --------
    >>> one_line("gpt\\x1b]52;c;ZWNobyBoaQ==\\x07\\nx")
    'gpt␛]52;c;ZWNobyBoaQ==␇␤x'
    >>> one_line(3)
    '3'
    """
    return str(text).translate(_LINE_TABLE)


_PLOT_TABLE: dict[int, str] = {
    ord(picture): f"⟨U+{code:04X}⟩" for code, picture in _LINE_TABLE.items() if code < 0x80
}
"""The control pictures :func:`one_line` uses (U+2400-U+2421, ``␤`` for a newline)."""


def plot_text(text: object) -> str:
    """:func:`one_line` for the text of a plot (PNG): the control pictures (``␛``,
    ``␤``, ...), which the plots' font (matplotlib's DejaVu Sans) does not have, are
    written like the other placeholders, ``⟨U+001B⟩``, so the label shows what was there
    instead of an empty box (and matplotlib prints no missing-glyph warning).

    Examples
    --------
    >>> plot_text("gpt\\x1b[31m\\nx")
    'gpt⟨U+001B⟩[31m⟨U+000A⟩x'
    """
    return one_line(text).translate(_PLOT_TABLE)


STUDY_NAME_RULE = (
    "1 to 64 characters: letters, digits, '_', '.' and '-', starting with a letter or digit"
)
"""The rule for study names, as error messages state it."""

_STUDY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class InvalidNameError(ValueError):
    """A study or annotator name breaks its rule; the message says which and why."""


def check_study_name(name: str) -> str:
    """``name`` if it is a safe study name, else :class:`InvalidNameError` saying why.

    A safe name is ASCII letters, digits, ``_``, ``.`` and ``-``, starts with a
    letter or digit and is at most 64 characters: it can never be a path
    (``/abs``, ``../x``), hold an escape sequence or differ only by invisible
    characters from another name.

    Examples
    --------
    >>> check_study_name("demo-arena")
    'demo-arena'
    >>> check_study_name("../../x")
    Traceback (most recent call last):
    ...
    annotate.names.InvalidNameError: study name '../../x' is not allowed (expected 1 to 64 ...
    """
    if not isinstance(name, str) or _STUDY_NAME.fullmatch(name) is None:
        raise InvalidNameError(
            f"study name {one_line(name)!r} is not allowed (expected {STUDY_NAME_RULE})"
        )
    return name


def normalize_annotator(name: str) -> str:
    """The canonical form of an annotator name, or :class:`InvalidNameError`.

    Unicode NFKC, surrounding whitespace removed, inner runs of whitespace made
    one space, then case-folded: ``"Alice "``, ``"alice"`` and ``"ALICE"`` are one
    person. Names with control or format characters (escape sequences,
    bidirectional overrides), and empty or over-long (more than 100 characters)
    names, are refused.

    Examples
    --------
    >>> normalize_annotator("  Alice   Smith ")
    'alice smith'
    >>> normalize_annotator("eve\\x1b[2J")
    Traceback (most recent call last):
    ...
    annotate.names.InvalidNameError: annotator name 'eve␛[2J' holds a control ...
    """
    if not isinstance(name, str):
        raise InvalidNameError(f"annotator name {name!r} is not text")
    text = unicodedata.normalize("NFKC", name)
    text = " ".join(text.split())
    if not text:
        raise InvalidNameError("annotator name is empty (expected a name or an id)")
    bad = [ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn")]
    if bad:
        raise InvalidNameError(
            f"annotator name {one_line(name)!r} holds a control or format character "
            f"(U+{ord(bad[0]):04X}); expected printable text"
        )
    if len(text) > 100:
        raise InvalidNameError(
            f"annotator name {one_line(text[:20])!r}... is {len(text)} characters "
            "(expected at most 100)"
        )
    return text.casefold()
