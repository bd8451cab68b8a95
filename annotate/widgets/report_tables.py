"""Tables of a report, shown as DataTables with literal text.

The widget knows nothing about statistics: it shows what a service computed,
given as :class:`annotate.views.ReportTable` values (``title``, ``columns``, ``rows``
and ``note``, every cell already text).
Every cell is shown literally: annotator names and question ids come from
people and study files, so no markup in them is interpreted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from annotate import views
from annotate.widgets.literal import literal, literal_line

_NUMERIC = re.compile(r"^[\[\]\d.,\s%+\-—]*\d[\[\]\d.,\s%+\-—]*$")


def _right_aligned(value: str) -> bool:
    """Numbers and intervals (``85.0``, ``-0.12``, ``[70.0, 95.0]``) are right-aligned."""
    return bool(_NUMERIC.match(value))


def cell(value: str) -> Text:
    """A cell shown literally; numbers are right-aligned."""
    t = literal(value)
    if _right_aligned(value):
        t.justify = "right"
    return t


class ReportTable(Vertical):
    """One table: its title, a DataTable and a note underneath.

    Parameters
    ----------
    table : views.ReportTable
        The table to show.
    """

    DEFAULT_CSS = """
    ReportTable { height: auto; margin: 0 0 1 0; }
    ReportTable > .report-table-title { text-style: bold; }
    ReportTable > DataTable { height: auto; max-height: 24; }
    ReportTable > .report-table-note { color: $text-muted; }
    """

    def __init__(self, table: views.ReportTable, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.table = table

    def compose(self) -> ComposeResult:
        yield Static(literal_line(self.table.title), classes="report-table-title", markup=False)
        dt: DataTable[Text] = DataTable(
            id=f"table-{self.table.key}", zebra_stripes=True, cursor_type="row"
        )
        yield dt
        if self.table.note:
            yield Static(literal(self.table.note), classes="report-table-note", markup=False)

    def on_mount(self) -> None:
        dt = self.query_one(DataTable)
        for name in self.table.columns:
            dt.add_column(literal_line(name))
        dt.add_rows([[cell(c) for c in row] for row in self.table.rows])


def table_widgets(tables: Sequence[views.ReportTable], keys: Sequence[str]) -> list[ReportTable]:
    """The tables named in ``keys`` (in that order), as widgets; missing keys are skipped."""
    by_key = {t.key: t for t in tables}
    return [ReportTable(by_key[k], id=f"report-{k}") for k in keys if k in by_key]
