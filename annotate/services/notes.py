"""Comments and flags that annotators leave on items (issue 12).

An annotator presses ``c`` to comment on the item on screen and ``f`` to flag it as
broken with one of :data:`FLAG_REASONS`. Notes are stored append-only
(:class:`annotate.store.models.ItemNote`), with the annotator's vote on the item when
there is one. This module is what the monitor, the report, the export and the import
read and write them through; the text is stored exactly and sanitised wherever shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.errors import InputFileError
from annotate.names import one_line
from annotate.services.textfiles import describe
from annotate.store import repo

FLAG_REASONS = ("typo", "identical questions", "response cut off", "other")
"""Why an item is flagged as broken (the choices the flag key offers)."""

NOTE_KINDS = ("comment", "flag")

NOTE_COLUMNS = repo.NOTE_COLUMNS
"""The columns of ``item_notes.<ext>`` in an export."""


@dataclass(frozen=True)
class NoteLine:
    """One note as the monitor and the report list it (text sanitised, one line)."""

    item: str
    annotator: str
    kind: str
    reason: str
    text: str
    when: datetime


@dataclass(frozen=True)
class NotesSummary:
    """The comments and flags of one study, for the lead (monitor, report)."""

    comments: int
    flags: int
    flagged_items: int
    reasons: dict[str, int]
    """Flags per reason."""
    lines: tuple[NoteLine, ...]
    """Every note, newest first."""

    @property
    def headline(self) -> str:
        """One line: how many comments and flags (and on how many items)."""
        if not self.comments and not self.flags:
            return "no comments or flags"
        parts = [f"{self.comments} comment{'s' * (self.comments != 1)}"]
        flags = f"{self.flags} flag{'s' * (self.flags != 1)}"
        if self.flags:
            why = ", ".join(f"{r} {n}" for r, n in sorted(self.reasons.items()))
            flags += f" on {self.flagged_items} item{'s' * (self.flagged_items != 1)} ({why})"
        parts.append(flags)
        return "; ".join(parts)


def summarize(rows: Iterable[repo.NoteRow], *, width: int = 200) -> NotesSummary:
    """Count and list notes; texts are made one safe line of at most ``width`` characters."""
    rows = list(rows)
    flags = [r for r in rows if r.kind == "flag"]
    lines = tuple(
        NoteLine(
            one_line(r.item_key),
            one_line(r.annotator),
            r.kind,
            one_line(r.reason),
            one_line(r.text[:width]) + ("…" if len(r.text) > width else ""),
            r.created_at,
        )
        for r in reversed(rows)
    )
    return NotesSummary(
        comments=sum(1 for r in rows if r.kind == "comment"),
        flags=len(flags),
        flagged_items=len({r.item_key for r in flags}),
        reasons=dict(Counter(one_line(r.reason) for r in flags)),
        lines=lines,
    )


def study_notes(engine: Engine, study_id: int) -> NotesSummary:
    """The notes of the study with row id ``study_id`` (monitor and report call this)."""
    with Session(engine) as s:
        return summarize(repo.item_notes(s, study_id))


def note_dicts(rows: Iterable[repo.NoteRow]) -> list[dict[str, object]]:
    """Notes as export records (:data:`NOTE_COLUMNS`), stored text exactly."""
    out: list[dict[str, object]] = []
    for r in rows:
        out.append(
            {
                "note_id": r.uuid,
                "study": r.study,
                "item_id": r.item_key,
                "annotator": r.annotator,
                "vote_id": r.vote_uuid or "",
                "kind": r.kind,
                "reason": r.reason,
                "text": r.text,
                "created_at": r.created_at.isoformat(),
            }
        )
    return out


def read_note_file(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The records of an ``item_notes.<csv|jsonl|parquet>`` file, with their line numbers."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl" and path.is_file() and not path.read_bytes().strip():
        return []  # an export with no notes writes an empty JSON Lines file
    from annotate.services.votes_io import read_records

    return read_records(path)


def import_notes(s: Session, path: Path, records: Iterable[tuple[int, Mapping[str, Any]]]) -> int:
    """Add exported notes inside the caller's transaction; returns how many were new.

    Idempotent by ``note_id``: a note already stored is skipped. The study and item
    must exist (the export's ``studies/`` are imported first, in the same transaction).

    Raises
    ------
    InputFileError
        A record naming an unknown study or item, or a bad kind or time (the caller's
        transaction is then rolled back: nothing is written).
    """
    recs = list(records)
    stored = repo.stored_note_uuids(s, [_text(r.get("note_id")) for _, r in recs])
    studies: dict[str, repo.StudyRow | None] = {}
    items: dict[str, dict[str, int]] = {}
    added = 0
    for line, r in recs:
        uuid = _text(r.get("note_id"))
        if not uuid:
            raise InputFileError(path, "empty", line=line, field="note_id")
        if uuid in stored:
            continue
        name, kind = _text(r.get("study")), _text(r.get("kind"))
        if name not in studies:
            studies[name] = repo.get_study(s, name)
        st = studies[name]
        if st is None:
            raise InputFileError(path, f"no study {describe(name)}", line=line, field="study")
        if name not in items:
            items[name] = repo.item_ids(s, st.id)
        item_id = items[name].get(_text(r.get("item_id")))
        if item_id is None:
            raise InputFileError(
                path, f"no item {describe(_text(r.get('item_id')))}", line=line, field="item_id"
            )
        if kind not in NOTE_KINDS:
            raise InputFileError(
                path, describe(kind), line=line, field="kind", expected="comment or flag"
            )
        created = _text(r.get("created_at"))
        try:
            when = datetime.fromisoformat(created.replace("Z", "+00:00")) if created else None
        except ValueError as err:
            raise InputFileError(
                path, describe(created), line=line, field="created_at", expected="ISO 8601"
            ) from err
        annotator = repo.annotator_id(s, _text(r.get("annotator")))
        assert annotator is not None
        repo.insert_item_note(
            s,
            study_id=st.id,
            item_id=item_id,
            annotator=annotator,
            kind=kind,
            reason=_text(r.get("reason")),
            body=_text(r.get("text")),
            vote_uuid=_text(r.get("vote_id")) or None,
            note_uuid=uuid,
            created_at=when,
        )
        stored.add(uuid)
        added += 1
    return added


def _text(value: object) -> str:
    """A cell as text ("" for an empty cell: CSV gives "", Parquet None or NaN)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value)


def note_line(n: NoteLine) -> str:
    """One note in one line: ``item p12 · flag (typo) · ada: the text``."""
    what = f"{n.kind} ({n.reason})" if n.reason else n.kind
    return f"item {n.item} · {what} · {n.annotator}" + (f": {n.text}" if n.text else "")


def monitor_lines(engine: Engine, study_id: int, *, latest: int = 3) -> tuple[str, ...]:
    """The monitor's notes about comments and flags: a count, then the latest few notes."""
    summary = study_notes(engine, study_id)
    if not summary.lines:
        return ()
    return (f"Item notes: {summary.headline}", *(note_line(n) for n in summary.lines[:latest]))


def report_lines(engine: Engine, study: str) -> tuple[str, ...]:
    """The report's section on comments and flags: a count, then every note (newest first)."""
    with Session(engine) as s:
        st = repo.get_study(s, study)
        rows = repo.item_notes(s, st.id) if st is not None else []
    summary = summarize(rows)
    if not summary.lines:
        return ()
    return (summary.headline, *(note_line(n) for n in summary.lines))
