"""``write_csv`` checks a row of printable ASCII text once (its joined text) instead of
cell by cell (issue 13: a million pairwise-kappa cells); the file must be what writing
:func:`annotate.names.one_line` of every cell gives (the reference, written out here)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from annotate.names import one_line
from annotate.services.report_files import write_csv


class _Text(str):
    pass


def _reference(header: list[str], rows: list[list[object]]) -> str:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow([one_line(c) for c in header])
    w.writerows([one_line(c) for c in row] for row in rows)
    return buf.getvalue()


def test_write_csv_equals_one_line_of_every_cell(tmp_path: Path) -> None:
    rows: list[list[object]] = [
        ["a", "0.25", "-0.0", ""],
        ["b\x1b[31m", "x\ty", "é", "\u202e"],
        ["c", 3, None, 1.5],
        [_Text("d"), "e,f", 'g"h', "new\nline"],
        [],
    ]
    path = write_csv(tmp_path / "t.csv", ["name", "v\x07", "w", "z"], rows)
    assert path.read_bytes().decode("utf-8") == _reference(["name", "v\x07", "w", "z"], rows)


def test_write_csv_reads_a_one_shot_row_once(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "g.csv", ["a", "b"], [iter(["x", "y"]), (c for c in ["1", "2"])])
    assert path.read_bytes().decode("utf-8") == "a,b\r\nx,y\r\n1,2\r\n"
