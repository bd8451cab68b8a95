"""Re-importing an export's re-tests and questionnaire answers (issue 16).

``annotate export`` writes ``retests.<fmt>`` (every row of the swapped re-test chains,
which the vote files leave out so that each item counts once) and ``annotators.<fmt>``
(the questionnaire answers). ``annotate import`` of an export folder reads them back
here, after the folder's studies and votes and in the same transaction, so that laptops
merged later lose neither. The rules are those of the vote import:

- a row whose id (``vote_id``; for answers the study, annotator and question) is
  already stored is skipped when its content is the same, and refused when it differs
  (a vote is never edited; a questionnaire is answered once);
- a re-test row names, in ``retest_of``, a stored vote of the same annotator on the same
  item of the same study that is not itself a re-test; its chain starts once per
  annotator and item, and each later row supersedes the chain's current head (an undo,
  ``retract``, withdraws it);
- an answer names a question of the study's ``[[questionnaire]]`` and only its choices
  (one unless the question is ``multiple``), as the questionnaire screen allows.

A bad row stops the import with one line (file, line, field, what was expected) and
the caller's transaction is rolled back: nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from sqlmodel import Session

from annotate.choices import LEFT_CHOICES, Choice, choices_for
from annotate.errors import AnnotateError, InputFileError
from annotate.names import one_line
from annotate.services.textfiles import describe
from annotate.store import quality_rows, repo

RETEST_STEM = "retests"
ANSWER_STEM = "annotators"

Records = list[tuple[int, dict[str, Any]]]


def quality_files(folder: Path) -> list[tuple[str, Path]]:
    """The export folder's ``retests`` and ``annotators`` files (the first format found
    of each: csv, jsonl, parquet) as ``(stem, path)``."""
    out = []
    for stem in (RETEST_STEM, ANSWER_STEM):
        for ext in ("csv", "jsonl", "parquet"):
            p = folder / f"{stem}.{ext}"
            if p.exists():
                out.append((stem, p))
                break
    return out


def read_quality_file(path: Path) -> Records:
    """The records of one file, with their line numbers (an empty JSON Lines file has none)."""
    if path.suffix.lower() == ".jsonl" and path.is_file() and not path.read_bytes().strip():
        return []
    from annotate.services.votes_io import read_records

    return read_records(path)


def _text(value: object) -> str:
    return "" if value is None else str(value).strip()


class _Rows:
    """Per-file lookups shared by both kinds of row: studies, items, annotators."""

    def __init__(self, s: Session, path: Path) -> None:
        self.s = s
        self.path = path
        self.studies: dict[str, repo.StudyRow | None] = {}
        self.items: dict[int, dict[str, int]] = {}
        self.annotators: dict[str, int] = {}

    def fail(self, line: int, field: str, problem: str, expected: str | None = None) -> NoReturn:
        raise InputFileError(self.path, problem, line=line, field=field, expected=expected)

    def study(self, line: int, r: Mapping[str, Any]) -> repo.StudyRow:
        name = _text(r.get("study"))
        if name not in self.studies:
            self.studies[name] = repo.get_study(self.s, name)
        st = self.studies[name]
        if st is None:
            self.fail(
                line, "study", f"no study {describe(name)}", "a study of this export or database"
            )
        assert st is not None
        return st

    def annotator(self, line: int, r: Mapping[str, Any]) -> int:
        name = _text(r.get("annotator"))
        if name not in self.annotators:
            try:
                aid = repo.annotator_id(self.s, name)
            except AnnotateError as err:
                self.fail(line, "annotator", str(err))
            assert aid is not None
            self.annotators[name] = aid
        return self.annotators[name]

    def item(self, line: int, st: repo.StudyRow, r: Mapping[str, Any]) -> int:
        if st.id not in self.items:
            self.items[st.id] = repo.item_ids(self.s, st.id)
        key = _text(r.get("item_id"))
        found = self.items[st.id].get(key)
        if found is None:
            self.fail(line, "item_id", f"no item {describe(key)} in study {one_line(st.name)!r}")
        assert found is not None
        return found

    def created(self, line: int, r: Mapping[str, Any]) -> datetime | None:
        from annotate.services.votes_io import _created_at

        return _created_at(self.path, line, r.get("created_at"))  # aware, in UTC


def import_retests(s: Session, path: Path, records: Iterable[tuple[int, Mapping[str, Any]]]) -> int:
    """Add the file's re-test votes not stored yet, in the caller's transaction; returns
    how many were added (see the module's rules).

    Raises
    ------
    InputFileError
        A row breaking a rule (nothing is written: the caller rolls back).
    """
    from annotate.services.votes_io import UUID_RE, _response_ms

    recs = list(records)
    rows = _Rows(s, path)
    named = [_text(r.get(k)) for _, r in recs for k in ("vote_id", "supersedes", "retest_of")]
    known = quality_rows.votes_by_uuid(s, [u for u in named if u])
    superseded = {v.supersedes: v.uuid for v in known.values() if v.supersedes}
    chains: dict[int, bool] = {}
    heads: dict[tuple[int, int], str] = {}
    added = 0
    for line, r in recs:
        uuid = _text(r.get("vote_id"))
        if not UUID_RE.match(uuid):
            rows.fail(line, "vote_id", describe(uuid), "a vote id (a UUID)")
        st = rows.study(line, r)
        if st.id not in chains:  # the study's stored re-test chains: their current heads
            chains[st.id] = True
            stored = quality_rows.retest_chain(s, st.id)
            replaced = {v.supersedes for v in stored if v.supersedes}
            for v in stored:
                known.setdefault(v.uuid, v)
                if v.supersedes:
                    superseded.setdefault(v.supersedes, v.uuid)
                if v.uuid not in replaced:
                    heads[(v.annotator_id, v.item_id)] = v.uuid
        annotator = rows.annotator(line, r)
        item = rows.item(line, st, r)
        choice = _text(r.get("choice"))
        allowed = [c.value for c in (*choices_for(st.kind), Choice.RETRACT)]
        if choice not in allowed:
            rows.fail(line, "choice", describe(choice), " or ".join(allowed))
        halves = LEFT_CHOICES["difficulty" if st.kind == "difficulty" else "arena"]
        left = _text(r.get("left"))
        if left not in (halves[0].value, halves[1].value):
            rows.fail(line, "left", describe(left), f"{halves[0].value} or {halves[1].value}")
        swapped = left == halves[1].value
        sup = _text(r.get("supersedes")) or None
        of = _text(r.get("retest_of"))
        fast_raw = _text(r.get("fast")).lower()
        if fast_raw not in ("", "true", "false", "1", "0"):
            rows.fail(line, "fast", describe(fast_raw), "true or false")
        response_ms = _response_ms(path, line, r.get("response_ms"))
        created_at = rows.created(line, r)
        old = known.get(uuid)
        if old is not None:  # already stored (or earlier in this file): the same, or refused
            same = (
                old.retest_of is not None
                and (old.study_id, old.annotator_id, old.item_id) == (st.id, annotator, item)
                and (old.choice, old.swapped, old.supersedes, old.retest_of)
                == (choice, swapped, sup, of)
            )
            if not same:
                rows.fail(
                    line,
                    "vote_id",
                    f"vote {uuid} is stored with other content",
                    "the same content for a vote id already imported (a vote is never "
                    "edited; the database was left unchanged)",
                )
            continue
        original = known.get(of)
        if (
            original is None
            or original.retest_of is not None
            or (original.study_id, original.annotator_id, original.item_id)
            != (st.id, annotator, item)
        ):
            what = (
                "no vote in the database or in this export's vote file"
                if original is None
                else "a re-test itself"
                if original.retest_of is not None
                else "a vote of another annotator, item or study"
            )
            rows.fail(
                line,
                "retest_of",
                f"{describe(of)} is {what}",
                "the vote_id of the annotator's own vote on the item, from the vote_log",
            )
        head = heads.get((annotator, item))
        if sup is None:
            if head is not None:
                rows.fail(
                    line,
                    "supersedes",
                    f"empty, but the annotator's re-test of this item already has vote {head}",
                    "one re-test chain per annotator and item (the database was left unchanged)",
                )
        else:
            target = known.get(sup)
            if target is None or target.retest_of is None:
                rows.fail(line, "supersedes", f"{describe(sup)} is not a stored re-test vote")
            assert target is not None
            if sup in superseded:
                rows.fail(
                    line,
                    "supersedes",
                    f"vote {sup} is already replaced by vote {superseded[sup]}",
                    "one history per annotator and item (the database was left unchanged)",
                )
            if head != sup:
                rows.fail(
                    line,
                    "supersedes",
                    f"vote {sup} is not the current re-test vote (vote {head} is)",
                    "the vote_id of the current re-test vote of the annotator on the item",
                )
            if choice == Choice.RETRACT and target.choice == Choice.RETRACT:
                rows.fail(line, "supersedes", f"retraction {uuid} withdraws a retraction")
        repo.insert_vote(
            s,
            study_id=st.id,
            annotator=annotator,
            item_id=item,
            choice=choice,
            swapped=swapped,
            response_ms=response_ms,
            fast=fast_raw in ("true", "1"),
            supersedes=sup,
            vote_uuid=uuid,
            created_at=created_at,
            retest_of=of,
        )
        new = quality_rows.StoredVote(uuid, st.id, annotator, item, choice, swapped, sup, of)
        known[uuid] = new
        if sup is not None:
            superseded[sup] = uuid
        heads[(annotator, item)] = uuid
        added += 1
    s.flush()
    return added


def import_answers(s: Session, path: Path, records: Iterable[tuple[int, Mapping[str, Any]]]) -> int:
    """Add the file's questionnaire answers not stored yet, in the caller's transaction;
    returns how many were added (see the module's rules).

    Raises
    ------
    InputFileError
        A row breaking a rule (nothing is written: the caller rolls back).
    """
    rows = _Rows(s, path)
    stored: dict[int, dict[tuple[int, str], str]] = {}
    new: dict[int, list[tuple[int, str, str, datetime | None]]] = {}
    for line, r in records:
        st = rows.study(line, r)
        questions = {q.key: q for q in st.settings.questionnaire}
        annotator = rows.annotator(line, r)
        key = _text(r.get("key"))
        q = questions.get(key)
        if q is None:
            rows.fail(
                line,
                "key",
                f"{describe(key)} is not a question of study {one_line(st.name)!r}",
                "the key of one of the study's [[questionnaire]] items",
            )
        assert q is not None
        raw = r.get("answer")
        try:
            got = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            got = None
        if (
            not isinstance(got, list)
            or not got
            or any(not isinstance(c, str) or c not in q.choices for c in got)
            or len(got) != len(set(got))
            or (len(got) > 1 and not q.multiple)
        ):
            many = "one or more" if q.multiple else "one"
            rows.fail(
                line,
                "answer",
                describe(raw),
                f"a JSON list of {many} of the question's choices "
                f"({', '.join(map(one_line, q.choices))[:200]})",
            )
        answer = json.dumps(got, ensure_ascii=False)
        if st.id not in stored:
            stored[st.id] = quality_rows.answers(s, st.id)
        before = stored[st.id].get((annotator, key))
        if before is not None:
            if json.loads(before) != got:
                rows.fail(
                    line,
                    "answer",
                    f"annotator {one_line(_text(r.get('annotator')))!r} already answered "
                    f"{one_line(key)!r} with {one_line(before)}",
                    "the same answer (a questionnaire is answered once; the database was "
                    "left unchanged)",
                )
            continue
        stored[st.id][(annotator, key)] = answer
        new.setdefault(st.id, []).append((annotator, key, answer, rows.created(line, r)))
    for sid, batch in new.items():
        quality_rows.insert_answers(s, sid, batch)
    return sum(len(b) for b in new.values())
