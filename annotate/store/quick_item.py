"""What the app's first item needs, read with the standard library's sqlite3 only.

``annotate --annotator NAME --study STUDY`` paints its first item before SQLAlchemy
and SQLModel are imported (they take several hundred milliseconds, more than the rest
of the start-up): :func:`annotate.services.quick_start.quick_start` asks this module
for the study, the annotator's progress and the texts of one item, and the full store
opens in the background once the item is on screen.

Like :mod:`annotate.store.quick`, this module answers only for an existing,
up-to-date database (its applied migrations are exactly
:data:`annotate.store.quick.MIGRATION_NAMES`), opened read-only; every query mirrors
the one :mod:`annotate.store.repo` runs for the same purpose (named beside it). For
anything else it says "ask the full store" (None), and any SQLite error propagates as
:class:`sqlite3.Error` for the caller to treat the same way.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import TracebackType

from annotate.store.quick import MIGRATION_NAMES
from annotate.store.rows import ItemLoad
from annotate.views import QuestionView

__all__ = ["QuickReader", "StoredStudy"]

_SQLITE_HEADER = b"SQLite format 3\x00"

StoredStudy = tuple[int, str, str, str, str, str, str]
"""A study row as stored: id, name, kind, title, description, settings JSON, fingerprint."""


class QuickReader:
    """A read-only sqlite3 connection to an up-to-date database (use :meth:`open`)."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con

    @classmethod
    def open(cls, path: Path) -> QuickReader | None:
        """A reader on ``path``; None when it is missing, not SQLite or not up to date."""
        try:
            with path.open("rb") as fh:
                if fh.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                    return None
            con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
        except (OSError, ValueError, sqlite3.Error):
            return None
        try:
            applied = [r[0] for r in con.execute("SELECT name FROM _migrations ORDER BY rowid")]
        except sqlite3.Error:
            con.close()
            return None
        if sorted(applied) != sorted(MIGRATION_NAMES):
            con.close()
            return None
        return cls(con)

    def __enter__(self) -> QuickReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.con.close()

    def study(self, name: str) -> StoredStudy | None:
        """The study called ``name`` as stored (``repo.get_study`` parses it further)."""
        row = self.con.execute(
            "SELECT id, name, kind, title, description, settings_json, fingerprint "
            "FROM study WHERE name = ?",
            (name,),
        ).fetchone()
        if row is None:
            return None
        sid, sname, kind, title, description, settings, fingerprint = row
        return (
            int(sid),
            str(sname),
            str(kind),
            str(title),
            str(description),
            str(settings or "{}"),
            str(fingerprint),
        )

    def annotator_id(self, normalized: str) -> int | None:
        """The annotator stored under exactly ``normalized`` (``repo.annotator_id`` also
        finds names stored before normalisation and creates new ones: the full store's job)."""
        row = self.con.execute("SELECT id FROM annotator WHERE name = ?", (normalized,)).fetchone()
        return None if row is None else int(row[0])

    def item_loads(self, study_id: int, kind: str) -> list[ItemLoad]:
        """``repo.item_loads(..., counts=False)``: every item, its subject or category."""
        if kind == "difficulty":
            sql = """SELECT i.id, i.key, i.position, q.subject FROM item i
                     JOIN questionpair p ON p.item_id = i.id JOIN question q ON q.id = p.first_id
                     WHERE i.study_id = ? ORDER BY i.position"""
        else:
            sql = """SELECT i.id, i.key, i.position, coalesce(pr.category, '') FROM item i
                     JOIN battle b ON b.item_id = i.id LEFT JOIN prompt pr ON pr.id = b.prompt_id
                     WHERE i.study_id = ? ORDER BY i.position"""
        rows = self.con.execute(sql, (study_id,)).fetchall()
        return [ItemLoad(int(a), str(b), int(c), str(d), 0) for a, b, c, d in rows]

    def voted_item_ids(self, study_id: int, annotator: int) -> set[int]:
        """``repo.voted_item_ids``: the items the annotator holds a current vote on."""
        rows = self.con.execute(
            "SELECT item_id FROM current_vote WHERE study_id = ? AND annotator_id = ?",
            (study_id, annotator),
        ).fetchall()
        return {int(r[0]) for r in rows}

    def subjects(self, study_id: int) -> list[str]:
        """``repo.subjects``: the study's question subjects, sorted."""
        rows = self.con.execute(
            "SELECT DISTINCT subject FROM question WHERE study_id = ?", (study_id,)
        ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def excluded_subjects(self, study_id: int, annotator: int) -> set[str]:
        """``repo.excluded_subjects``: the latest choice per subject wins."""
        rows = self.con.execute(
            "SELECT subject, excluded FROM subjectchoice WHERE study_id = ? AND annotator_id = ? "
            "ORDER BY id",
            (study_id, annotator),
        ).fetchall()
        state: dict[str, bool] = {}
        for subject, excluded in rows:
            state[str(subject)] = bool(excluded)
        return {s for s, e in state.items() if e}

    def has_votes_on(self, annotator: int, item_id: int) -> bool:
        """Whether any vote row of the annotator on the item exists (an undone vote, say)."""
        row = self.con.execute(
            "SELECT 1 FROM vote WHERE annotator_id = ? AND item_id = ? LIMIT 1",
            (annotator, item_id),
        ).fetchone()
        return row is not None

    def pair(self, item_id: int) -> tuple[QuestionView, QuestionView] | None:
        """``repo.pair_view``: the pair's first and second questions as stored."""
        rows = self.con.execute(
            """SELECT 0, q.key, q.subject, q.text, q.choices_json FROM questionpair p
               JOIN question q ON q.id = p.first_id WHERE p.item_id = ?
               UNION ALL
               SELECT 1, q.key, q.subject, q.text, q.choices_json FROM questionpair p
               JOIN question q ON q.id = p.second_id WHERE p.item_id = ?
               ORDER BY 1""",
            (item_id, item_id),
        ).fetchall()
        if len(rows) != 2:
            return None
        first, second = (
            QuestionView(str(key), str(subject), str(text), tuple(json.loads(ch)) if ch else None)
            for _, key, subject, text, ch in rows
        )
        return first, second

    def battle(self, item_id: int) -> tuple[str | None, str, str | None, str | None] | None:
        """``repo.battle_view`` without the model names: prompt, category, responses A and B."""
        row = self.con.execute(
            "SELECT prompt_id, model_a, model_b FROM battle WHERE item_id = ?", (item_id,)
        ).fetchone()
        if row is None:
            return None
        prompt_id, model_a, model_b = row
        if prompt_id is None:
            return None, "", None, None
        prompt = self.con.execute(
            "SELECT text, category FROM prompt WHERE id = ?", (prompt_id,)
        ).fetchone()
        if prompt is None:
            return None
        texts = dict(
            self.con.execute(
                "SELECT model, text FROM modelresponse WHERE prompt_id = ? AND model IN (?, ?)",
                (prompt_id, model_a, model_b),
            ).fetchall()
        )
        return str(prompt[0]), str(prompt[1]), texts.get(model_a), texts.get(model_b)
