"""``textfiles.text_lines``: the lines ``csv.reader`` reads, one at a time.

``read_csv`` used to hand ``csv.reader`` an ``io.StringIO(text, newline="")``, which holds
the text at 4 bytes a character (760 MB beside a 190 MB vote file). ``text_lines`` must
give exactly the lines that ``StringIO`` gave (the reference here): split after ``\\r\\n``,
``\\r`` or ``\\n`` and nowhere else (not at ``\\x85``, ``\\u2028``, ``\\v`` or ``\\f``, where
``str.splitlines`` would split), ends kept, the last line with or without an end.
"""

from __future__ import annotations

import csv
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.services.textfiles import text_lines

PIECES = st.sampled_from(["a", "b,c", '"', '"q\nr"', "\r", "\n", "\r\n", "\x85", "\u2028", "\v"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join) | st.text(max_size=60))
def test_the_lines_of_stringio_newline_empty(text: str) -> None:
    assert list(text_lines(text)) == io.StringIO(text, newline="").readlines()


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_csv_reads_the_same_rows_and_line_numbers(text: str) -> None:
    def rows(lines: object) -> object:
        reader = csv.reader(lines)  # type: ignore[arg-type]
        out = []
        try:
            for cells in reader:
                out.append((reader.line_num, cells))
        except csv.Error as err:
            out.append((reader.line_num, [str(err)]))
        return out

    assert rows(text_lines(text)) == rows(io.StringIO(text, newline=""))
