"""Where the project may write: every output file stays under the folder the user chose.

A study name, a model name or a method name can end up in a file or folder
name (``studies/<name>/``, ``report-<study>/``, ``<method>_models.csv``). Names
are validated at import, but an older database, a hand-edited one or a bug
could still hold ``/abs/dir`` or ``../../x``. :func:`inside` is the one check
every writer goes through: it joins the parts, resolves the result (``..``,
symlinks) and refuses anything that is not strictly inside the base folder.
:func:`output_folder` prepares the base folder itself and says in one line
what is wrong when it cannot be one (a file, no permission).
"""

from __future__ import annotations

import os
from pathlib import Path

from annotate.errors import AnnotateError
from annotate.names import one_line

__all__ = ["OutsideOutputError", "inside", "output_folder"]


class OutsideOutputError(AnnotateError):
    """A file would be written outside the folder the user chose; nothing was written there."""

    def __init__(self, base: Path, parts: tuple[str, ...]) -> None:
        joined = one_line("/".join(parts))
        super().__init__(
            f"refusing to write {joined!r}: it is not inside the output folder "
            f"{one_line(base)} (a study or file name holds a path; rename it to a plain name)",
            title="Unsafe output path",
        )


def inside(base: Path, *parts: str) -> Path:
    """``base / parts...``, resolved, if it lies strictly inside ``base``.

    Parameters
    ----------
    base : Path
        The folder the user chose (or the default output folder).
    *parts : str
        Path components taken from data (a study name, ``"studies"``, a file name).
        Each must be a plain, non-empty name: no separator, no ``..``, no drive.

    Returns
    -------
    Path
        The resolved path below ``base``.

    Raises
    ------
    OutsideOutputError
        If any part is empty, ``.``, ``..``, absolute or holds a separator or a NUL,
        or if the resolved path (after symlinks) is not below the resolved ``base``.

    Examples
    --------
    >>> import tempfile
    >>> base = Path(tempfile.mkdtemp())
    >>> inside(base, "studies", "demo").relative_to(base.resolve()).as_posix()
    'studies/demo'
    >>> try:
    ...     inside(base, "studies", "../../etc")
    ... except OutsideOutputError as err:
    ...     print(str(err)[:40])
    refusing to write 'studies/../../etc': i
    """
    seps = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    for part in parts:
        if (
            not isinstance(part, str)
            or part in ("", ".", "..")
            or "\x00" in part
            or any(sep in part for sep in seps)
            or Path(part).is_absolute()
            or Path(part).drive
        ):
            raise OutsideOutputError(base, tuple(str(p) for p in parts))
    root = base.resolve()
    target = root.joinpath(*parts).resolve()
    if target == root or root not in target.parents:
        raise OutsideOutputError(base, parts)
    return target


def output_folder(folder: Path) -> Path:
    """Create ``folder`` (and its parents) if needed and return it resolved.

    Raises
    ------
    AnnotateError
        If ``folder`` exists and is not a folder, or cannot be created; one line
        naming the folder and what to do.
    """
    if folder.exists() and not folder.is_dir():
        raise AnnotateError(
            f"output folder {one_line(folder)} is a file, not a folder; "
            "choose a folder with --out DIR",
            title="Not a folder",
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AnnotateError(
            f"cannot create the output folder {one_line(folder)}: "
            f"{one_line(err.strerror or err)}; choose another folder with --out DIR",
            title="Cannot write",
        ) from err
    return folder.resolve()
