"""Errors the application shows to people.

Every error says what failed, the offending value, what was expected and what
to do. Command-line failures print ``str(error)`` to stderr and exit non-zero;
screens show it with ``notify(..., severity="error")``.
"""

from __future__ import annotations

from pathlib import Path


class AnnotateError(Exception):
    """Base class for errors shown to the user.

    Parameters
    ----------
    msg : str
        The whole message, one line where possible.
    title : str
        A short heading for notifications and modals.
    """

    def __init__(self, msg: str, title: str = "Error") -> None:
        super().__init__(msg)
        self.msg = msg
        self.title = title

    def __str__(self) -> str:
        return self.msg


class InputFileError(AnnotateError):
    """A study, vote or matrix file is malformed. Nothing was written.

    The message has the form ``FILE:LINE: field 'F': what is wrong (expected ...)``.
    """

    def __init__(
        self,
        path: Path | str,
        problem: str,
        *,
        line: int | None = None,
        field: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.problem = problem
        self.expected = expected
        where = self.path if line is None else f"{self.path}:{line}"
        what = problem if field is None else f"field '{field}': {problem}"
        tail = f" (expected {expected})" if expected else ""
        super().__init__(f"{where}: {what}{tail}", title="Cannot import")


class StudyNotFoundError(AnnotateError):
    """No study of that name in the database."""

    def __init__(self, name: str, known: list[str]) -> None:
        hint = f"; known studies: {', '.join(known)}" if known else "; the database has no studies"
        super().__init__(f"no study named {name!r}{hint}", title="Unknown study")


class VoteConflictError(AnnotateError):
    """A vote cannot be recorded because another vote got there first."""
