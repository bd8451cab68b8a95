"""The monitor's tables: annotators with their status and signals, and the leaderboard.

They display what :mod:`annotate.services.monitoring` computed; the only
arithmetic here is formatting. The rows are :class:`annotate.views.AnnotatorStatus`
and :class:`annotate.views.ItemRating`.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from annotate.views import AnnotatorStatus, ItemRating, QualityCheck, share_cell
from annotate.widgets.literal import literal_line

DASH = "–"


def pct(x: float | None) -> str:
    """``0.625`` -> ``"62%"``; a dash when undefined."""
    return DASH if x is None else f"{100 * x:.0f}%"


def ability_text(row: AnnotatorStatus) -> str:
    """``"1.90 [1.25, 2.55]"``, the ability with its 95% interval."""
    if row.ability is None:
        return DASH
    if row.ability_lower is None or row.ability_upper is None:
        return f"{row.ability:.2f}"
    return f"{row.ability:.2f} [{row.ability_lower:.2f}, {row.ability_upper:.2f}]"


def left_text(row: AnnotatorStatus) -> str:
    """``"62% p=0.003"``: share of decisive votes for the side shown first."""
    if row.left_share is None:
        return DASH
    p = row.left_p_value
    ptxt = "" if p is None else (" p<.001" if p < 0.001 else f" p={p:.3f}".replace("0.", "."))
    return f"{pct(row.left_share)}{ptxt}"


def majority_text(row: AnnotatorStatus) -> str:
    """``"68% (45%)"``: agreement with the others' majority (chance level)."""
    if row.majority_agreement is None:
        return DASH
    return f"{pct(row.majority_agreement)} ({pct(row.majority_chance)})"


def check_text(check: QualityCheck | None) -> str:
    """``"80% [49-94] n=10"``: a gold accuracy or self-consistency; a dash without checks."""
    return DASH if check is None else check.cell


STATUS_COLOR = {"flagged": "error", "pending": "warning", "reliable": "success"}
"""Theme variable that colours each status."""


def _num(value: object) -> Text:
    return Text(str(value), justify="right")


class AnnotatorTable(DataTable[Text]):
    """Annotators, most urgent status first; the row key is the annotator's name."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.kind = ""
        self.quality = False
        """Whether the Gold and Re-test columns are shown (a study with gold or re-tests)."""

    def set_kind(self, kind: str, quality: bool = False) -> None:
        """Columns for ``arena`` (tie and both-bad rates) or ``difficulty`` (skip rate),
        with ``quality`` the gold accuracy and self-consistency too."""
        if kind == self.kind and quality == self.quality:
            return
        self.kind, self.quality = kind, quality
        self.clear(columns=True)
        self.add_column("Annotator", key="annotator")
        self.add_column("Votes", key="votes")
        self.add_column("Status", key="status")
        self.add_column("Ability [95% CI]", key="ability")
        self.add_column("Fast", key="fast")
        self.add_column("Left", key="left")
        if kind == "difficulty":
            self.add_column("Skip", key="skip")
        else:
            self.add_column("Tie", key="tie")
            self.add_column("Bad", key="bad")
        self.add_column("Majority", key="majority")
        if quality:
            self.add_column("Gold [95%]", key="gold")
            self.add_column("Re-test [95%]", key="retest")
        self.add_column("Verdict", key="verdict")
        self.add_column("Reason", key="reason")

    def status_text(self, status: str) -> Text:
        color = self.app.theme_variables.get(STATUS_COLOR.get(status, ""), "")
        return Text(status, style=f"bold {color}" if status == "flagged" else color)

    def show(self, kind: str, rows: Sequence[AnnotatorStatus]) -> None:
        """Replace the rows, keeping the cursor on the same annotator."""
        self.set_kind(kind, any(r.gold or r.consistency for r in rows))
        current = self.highlighted_name
        self.clear()
        for r in rows:
            cells = [
                literal_line(r.annotator),
                _num(r.votes),
                self.status_text(r.status),
                Text(ability_text(r), justify="right"),
                _num(pct(r.fast_share)),
                Text(left_text(r)),
            ]
            if kind == "difficulty":
                cells.append(_num(pct(r.skip_rate)))
            else:
                cells += [_num(pct(r.tie_rate)), _num(pct(r.both_bad_rate))]
            cells.append(Text(majority_text(r)))
            if self.quality:
                cells += [Text(check_text(r.gold)), Text(check_text(r.consistency))]
            cells += [literal_line(r.verdict), literal_line(r.reason)]
            self.add_row(*cells, key=r.annotator)
        if current is not None:
            for index, r in enumerate(rows):
                if r.annotator == current:
                    self.move_cursor(row=index, animate=False)
                    break

    @property
    def highlighted_name(self) -> str | None:
        """The annotator under the cursor, if any."""
        if not self.row_count or not self.is_valid_row_index(self.cursor_row):
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return None if key.value is None else str(key.value)


class Leaderboard(DataTable[Text]):
    """Models (best first) or questions (hardest first) with their 95% intervals."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.kind = ""

    def show(self, kind: str, rows: Sequence[ItemRating]) -> None:
        """Replace the rows (columns follow the study kind)."""
        if kind != self.kind:
            self.kind = kind
            self.clear(columns=True)
            self.add_column("Rank", key="rank")
            self.add_column("Question" if kind == "difficulty" else "Model", key="name")
            if kind == "difficulty":
                self.add_column("Subject", key="subject")
            self.add_column("Rating", key="rating")
            self.add_column("95% CI", key="ci")
            self.add_column("Votes", key="votes")
            if kind == "arena":
                self.add_column("Both bad [95%]", key="both-bad")
        self.clear()
        for r in rows:
            cells = [_num(r.rank), literal_line(r.name)]
            if kind == "difficulty":
                cells.append(literal_line(r.detail))
            cells += [
                _num(f"{r.rating:.0f}"),
                Text(f"{r.lower:.0f} – {r.upper:.0f}"),
                _num(r.comparisons),
            ]
            if kind == "arena":
                cells.append(Text(share_cell(*(r.both_bad or (None, None, None)))))
            self.add_row(*cells, key=r.name)
