"""``annotate import``: study folders, vote exports and third-party formats.

Everything named on one command line is parsed and checked first, then written
in ONE transaction: either every file loads whole or the database is unchanged.
(A large plain vote CSV named alone is written while it is read, in the same one
transaction, which commits only once every row has passed every check:
:func:`_import_streamed`.)
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.choices import LEFT_CHOICES, Choice, choices_for
from annotate.errors import AnnotateError, InputFileError
from annotate.names import STUDY_NAME_RULE, InvalidNameError, check_study_name, one_line
from annotate.services import formats
from annotate.services.studies import StudySpec, is_study_dir, parse_study
from annotate.services.votes_io import (
    FastRead,
    VoteCsvChunks,
    VoteRecord,
    VoteTable,
    _NotFastError,
    fast_vote_table,
    is_vote_file,
    open_vote_chunks,
    parse_vote_file,
    read_vote_chunks,
    read_votes,
    sorted_uuid_hashes,
    uuid_rows,
)
from annotate.store import repo
from annotate.study_settings import StudySettings


@dataclass
class ImportReport:
    """What an import added, per study."""

    studies_created: list[str] = field(default_factory=list)
    studies_unchanged: list[str] = field(default_factory=list)
    items_added: int = 0
    votes_added: int = 0
    votes_skipped: int = 0
    """Votes already in the database (same uuid)."""
    scores_added: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "studies_created": self.studies_created,
            "studies_unchanged": self.studies_unchanged,
            "items_added": self.items_added,
            "votes_added": self.votes_added,
            "votes_skipped": self.votes_skipped,
            "scores_added": self.scores_added,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class _Job:
    kind: str
    payload: Any
    path: Path


def safe_study_name(text: str, default: str = "imported") -> str:
    """A study name derived from ``text`` (a file stem, a task) that passes the naming rule.

    Runs of other characters become ``-``, leading punctuation is dropped and the
    name is cut to 64 characters; ``default`` when nothing is left.

    Examples
    --------
    >>> safe_study_name("../../etc/arena battles (2024)")
    'etc-arena-battles-2024'
    >>> safe_study_name("\\x1b]0;title")
    '0-title'
    >>> safe_study_name("...")
    'imported'
    """
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:64].rstrip("-.")
    return check_study_name(name) if name else default


def _checked_study_option(path: Path, study: str | None) -> str | None:
    """``--study NAME`` if it passes the naming rule, else one InputFileError line."""
    if study is None:
        return None
    try:
        return check_study_name(study)
    except InvalidNameError:
        raise InputFileError(
            path,
            f"{one_line(study)[:80]!r} is not a study name",
            field="--study",
            expected=STUDY_NAME_RULE,
        ) from None


def classify(
    path: Path,
    *,
    fmt: str = "auto",
    study: str | None = None,
    model: str | None = None,
    metric: str | None = None,
    filter_name: str | None = None,
    fast: FastRead | None = None,
) -> list[_Job]:
    """Parse one command-line path into import jobs (no database access).

    ``fast``: what the fast path made of the file already (:func:`_import_streamed`).
    """
    study = _checked_study_option(path, study)
    if not path.exists():
        raise InputFileError(path, "no such file or folder")
    if fmt == "lm-eval" or (
        fmt == "auto" and (path.name.startswith("samples_") and path.suffix == ".jsonl")
    ):
        samples = formats.parse_harness(path, model=model, metric=metric, filter_name=filter_name)
        return [_Job("harness", samples, path)]
    if path.is_dir():
        if fmt in ("auto", "study") and is_study_dir(path):
            return [_Job("study", parse_study(path), path)]
        if fmt == "auto":
            jobs: list[_Job] = []
            studies_dir = path / "studies"
            if studies_dir.is_dir():
                for d in sorted(studies_dir.iterdir()):
                    if is_study_dir(d):
                        jobs.append(_Job("study", parse_study(d), d))
            for stem in ("vote_log", "votes"):
                found = [
                    p
                    for p in (path / f"{stem}.{e}" for e in ("csv", "jsonl", "parquet"))
                    if p.exists()
                ]
                if found:
                    jobs.append(_Job("votes", read_votes(found[0]), found[0]))
                    break
            jobs.extend(_note_jobs(path))  # comments and flags (issue 12)
            jobs.extend(_quality_jobs(path))  # re-tests and questionnaire answers (issue 16)
            if jobs:
                return jobs
            if any(path.rglob("samples_*.jsonl")):
                samples = formats.parse_harness(
                    path, model=model, metric=metric, filter_name=filter_name
                )
                return [_Job("harness", samples, path)]
        raise InputFileError(
            path,
            "not a study folder, an export folder or an lm-evaluation-harness output folder",
            expected="a folder with study.toml, an export (votes.*), or samples_*.jsonl files",
        )
    if fmt == "study":
        raise InputFileError(path, "is a file", expected="a study folder with study.toml")
    if fmt == "votes":
        return [_Job("votes", read_votes(path, fast), path)]
    name = study or safe_study_name(path.stem)
    if fmt == "chatbot-arena":
        return [_Job("arena", (name, formats.parse_chatbot_arena(path, name)), path)]
    if fmt == "llmfao":
        return [_Job("arena", (name, formats.parse_llmfao(path, name)), path)]
    if path.suffix.lower() == ".parquet":
        return [_Job("votes", read_votes(path), path)]
    if fast is None:  # a plain vote CSV, read once (sniffing reads it whole)
        fast = fast_vote_table(path)
    if fast.table is not None:
        return [_Job("votes", fast.table, path)]
    if fast.refused_rows:  # a plain CSV whose header the fast path took: a vote file
        return [_Job("votes", read_votes(path, fast), path)]
    cols = formats.sniff_columns(path)  # (reads the whole file)
    if is_vote_file(cols):
        return [_Job("votes", read_votes(path, fast), path)]
    if {"model_a", "model_b", "winner", "judge"} <= cols:
        return [_Job("arena", (name, formats.parse_chatbot_arena(path, name)), path)]
    if {"id", "model_x", "model_y", "worker", "winner", "left", "right"} <= cols:
        return [_Job("arena", (name, formats.parse_llmfao(path, name)), path)]
    raise InputFileError(
        path,
        f"unrecognised columns ({one_line(', '.join(sorted(cols)))[:200] or 'none'})",
        expected="a vote export (vote_id, study, annotator, item_id, choice), Chatbot Arena "
        "battles (model_a, model_b, winner, judge) or LLMFAO votes "
        "(id, prompt, model_x, model_y, worker, winner, left, right)",
    )


def import_paths(
    engine: Engine,
    paths: list[Path],
    *,
    fmt: str = "auto",
    study: str | None = None,
    model: str | None = None,
    metric: str | None = None,
    filter_name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Parse every path, then write everything in one transaction.

    One large plain vote CSV alone (at least :data:`STREAM_MIN_ROWS` lines) is written
    chunk by chunk while the next chunks are read, in one transaction too
    (:func:`_import_streamed`): the same rows, report and one-line errors.

    ``progress``, when given, is called as ``progress(done, total)`` after each parsed
    file is written (the command line draws a progress bar with it).
    """
    known: FastRead | None = None
    if len(paths) == 1:
        streamed = _import_streamed(engine, paths[0], fmt=fmt, study=study, progress=progress)
        if isinstance(streamed, ImportReport):
            return streamed
        known = streamed
    jobs: list[_Job] = []
    for p in paths:
        jobs.extend(
            classify(
                p,
                fmt=fmt,
                study=study,
                model=model,
                metric=metric,
                filter_name=filter_name,
                fast=known,
            )
        )
    report = ImportReport()
    touched: set[str] = set()
    with _import_session(engine, jobs) as s:
        for done, job in enumerate(jobs, 1):
            if job.kind == "study":
                _apply_study(s, job.payload, job.path, report)
            elif job.kind == "votes":
                if isinstance(job.payload, VoteTable):
                    _apply_vote_table(s, job.payload, report)
                else:
                    _apply_votes(s, job.payload, report)
            elif job.kind == "arena":
                name, records = job.payload
                _apply_arena(s, name, records, report)
                touched.add(name)
            elif job.kind == "notes":
                _apply_notes(s, job, report)
            elif job.kind in ("retests", "answers"):
                _apply_quality(s, job, report)
            elif job.kind == "harness":
                touched.add(_apply_harness(s, study, job.payload, job.path, report))
            if progress is not None:
                progress(done, len(jobs))
        for name in touched:
            _refresh_fingerprint(s, name)
    from annotate.services.identity import import_notes  # responses naming a model (issue 9)

    report.notes.extend(import_notes(engine, dict.fromkeys([*report.studies_created, *touched])))
    return report


OWN_FOREIGN_KEYS_MIN_ROWS = 50_000
"""An import of only vote tables (``vote_log.csv`` files the fast reader took) holding at
least this many rows runs on SQLite with ``PRAGMA foreign_keys=OFF`` and checks the
parents of the votes it writes itself (:func:`repo.missing_vote_parents`): one set
comparison per study instead of three B-tree lookups per row (~0.5 s per million)."""


ROLLBACK_JOURNAL_MAX_ROWS = 1_200_000
"""The largest import of vote tables that runs with a rollback journal
(:class:`~annotate.store.engine.RollbackJournal`, when alone on the file): the pages it
writes (~190 bytes a vote, table and indexes) fit the bulk insert's page cache
(:data:`repo.BULK_CACHE_KIB`), so nothing spills into the file before COMMIT, and a
program that opens the file meanwhile reads the last committed state (a spill would take
SQLite's exclusive lock until COMMIT). A larger import runs in WAL mode, as before; so
does one into a database whose pages could spill the cache (:func:`_journal_fits`)."""

VOTE_BYTES = 200
"""Bytes a vote takes in the vote table and its indexes, at most (a million votes of the
benchmark study: 11,951 pages of 16 KiB, ~196 bytes a vote)."""

PAGE_CACHE_OVERHEAD = 256
"""Bytes SQLite's page cache spends on each page beside its content, at most (a cache of
``-N`` KiB holds ``N * 1024 / (page_size + overhead)`` pages)."""


def _journal_fits(dbapi_connection: Any, table_rows: int) -> bool:
    """Whether an import of ``table_rows`` votes can change every page it changes in the
    bulk insert's page cache (:data:`repo.BULK_CACHE_KIB`) without spilling into the file
    before COMMIT, which would hold SQLite's exclusive lock (with a rollback journal, a
    program opening the file meanwhile would wait out its busy timeout and fail).

    The pages changed: the new votes' (:data:`VOTE_BYTES` each, table and indexes) and, at
    most, every page the database uses now: an import rebuilds the vote indexes over the
    stored votes too, or (into a table holding more votes than it adds) inserts into them
    at scattered places. The bound counts the file's pages in use (``page_count`` less
    ``freelist_count``), which holds those indexes whatever else the file holds."""
    (page_size,) = dbapi_connection.execute("PRAGMA page_size").fetchone()
    (pages,) = dbapi_connection.execute("PRAGMA page_count").fetchone()
    (free,) = dbapi_connection.execute("PRAGMA freelist_count").fetchone()
    new = -(-table_rows * VOTE_BYTES // page_size)
    cache = repo.BULK_CACHE_KIB * 1024 // (page_size + PAGE_CACHE_OVERHEAD)
    return bool(pages - free + new <= cache)


@contextmanager
def _import_session(engine: Engine, jobs: list[_Job]) -> Iterator[Session]:
    """The import's write transaction (:func:`~annotate.store.writelock.write_session`);
    for a large import of vote tables into SQLite, with the connection's foreign-key
    enforcement off for the transaction (see :data:`OWN_FOREIGN_KEYS_MIN_ROWS`).

    SQLite ignores ``PRAGMA foreign_keys`` inside a transaction, so it is set on the
    connection before ``BEGIN`` and set back after the commit or rollback, on every exit
    (an error included); a connection on which it cannot be set back is discarded
    (``invalidate``) rather than returned to the pool without its foreign keys. Every
    vote insert of such a transaction first checks that the study, annotators and items
    it names exist (:func:`_check_vote_parents`).
    """
    rows = sum(len(j.payload) for j in jobs if isinstance(j.payload, VoteTable))
    only_tables = all(j.kind == "votes" and isinstance(j.payload, VoteTable) for j in jobs)
    with _vote_import_session(engine, rows if only_tables else 0) as s:
        yield s


@contextmanager
def _vote_import_session(engine: Engine, table_rows: int) -> Iterator[Session]:
    """:func:`_import_session` of an import whose every job is a vote table, ``table_rows``
    rows in all (0 for any other import)."""
    from annotate.store.engine import RollbackJournal
    from annotate.store.writelock import database_faults, engine_writer_queue, write_session

    if engine.url.get_backend_name() != "sqlite" or table_rows < OWN_FOREIGN_KEYS_MIN_ROWS:
        with write_session(engine) as s:
            yield s
        return
    with engine_writer_queue(engine), database_faults(engine), engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.execute("PRAGMA foreign_keys=OFF")  # outside any transaction (a no-op inside)
        # pages written once, not to the WAL and again by the checkpoint (the file back in
        # WAL mode after; in WAL mode throughout when another connection has it open)
        journal = RollbackJournal(
            raw,
            enabled=table_rows <= ROLLBACK_JOURNAL_MAX_ROWS and _journal_fits(raw, table_rows),
        )
        try:
            with journal, Session(bind=conn) as s, s.begin():
                yield s
        finally:
            try:
                raw.execute("PRAGMA foreign_keys=ON")
                restored = raw.execute("PRAGMA foreign_keys").fetchone()[0] == 1
            except sqlite3.Error:
                restored = False
            if not (restored and journal.in_wal):
                # never back to the pool without its foreign keys or out of WAL mode
                conn.invalidate()


def _check_vote_parents(s: Session, study_id: int, annotator_ids: Any, item_ids: Any) -> None:
    """When the connection does not enforce foreign keys (:func:`_import_session`): refuse
    (rolling back the import) vote rows whose study, annotator or item is not stored."""
    if repo.foreign_keys_enforced(s):
        return
    missing = repo.missing_vote_parents(s, study_id, annotator_ids, item_ids)
    if missing is not None:
        raise AnnotateError(
            f"the votes name {missing} that is not in the database (nothing was imported)",
            title="Cannot import",
        )


def _refresh_fingerprint(s: Session, name: str) -> None:
    from annotate.services.exporting import stored_spec

    st = repo.get_study(s, name)
    assert st is not None
    repo.set_fingerprint(s, st.id, stored_spec(s, st).fingerprint())


def _apply_study(s: Session, spec: StudySpec, path: Path, report: ImportReport) -> None:
    fp = spec.fingerprint()
    existing = repo.get_study(s, spec.name)
    if existing is not None:
        if existing.fingerprint == fp:
            report.studies_unchanged.append(spec.name)
            return
        raise InputFileError(
            path / "study.toml",
            f"a different study named {spec.name!r} is already in the database",
            field="name",
            expected="a new name, or the same items as the stored study",
        )
    sid = repo.insert_study(
        s,
        name=spec.name,
        kind=spec.kind,
        title=spec.title,
        description=spec.description,
        settings=spec.settings,
        fingerprint=fp,
    )
    if spec.kind == "difficulty":
        qids = repo.insert_questions(
            s, sid, [(q.key, q.subject, q.text, q.choices) for q in spec.questions]
        )
        for pos, p in enumerate(spec.pairs):
            item = repo.insert_item(s, sid, p.key, pos)
            repo.insert_pair(s, item, qids[p.first], qids[p.second])
            if p.gold:
                repo.insert_gold(s, item, p.gold)
        report.scores_added += repo.insert_scores(s, ((qids[q], m, v) for q, m, v in spec.scores))
        repo.insert_models(s, sid, spec.models)
        report.items_added += len(spec.pairs)
    else:
        pids = {p.key: repo.insert_prompt(s, sid, p.key, p.text, p.category) for p in spec.prompts}
        for r in spec.responses:
            repo.insert_response(s, pids[r.prompt], r.model, r.text)
        for pos, b in enumerate(spec.battles):
            item = repo.insert_item(s, sid, b.key, pos)
            repo.insert_battle(s, item, pids[b.prompt] if b.prompt else None, b.model_a, b.model_b)
            if b.gold:
                repo.insert_gold(s, item, b.gold)
        report.items_added += len(spec.battles)
    s.flush()
    report.studies_created.append(spec.name)


@dataclass(frozen=True)
class _Known:
    """A vote the writer knows (stored, or added earlier in this import)."""

    annotator: int
    item: int
    choice: str
    swapped: bool
    response_ms: int | None
    fast: bool
    created_at: datetime | None
    """Naive UTC."""
    supersedes: str | None


def _naive_utc(value: Any) -> datetime | None:
    if value is None:
        return None
    dt = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return dt.astimezone(UTC).replace(tzinfo=None) if dt.tzinfo is not None else dt


_UNCHANGED = (
    "the same content for a vote id already imported (a vote is never edited: a change of "
    "mind is a new vote whose supersedes names the old one)"
)

_VOTE_FILE_FIELDS = {
    "vote_id": "vote_id",
    "annotator": "annotator",
    "item_id": "item_id",
    "choice": "choice",
    "left": "left",
    "response_ms": "response_ms",
    "fast": "fast",
    "created_at": "created_at",
    "supersedes": "supersedes",
}


_SECOND_HALVES = frozenset(second for _, second in LEFT_CHOICES.values())
"""The ``left`` values that say the item's second half was shown first (``swapped``)."""


class _VoteWriter:
    """Inserts imported votes of one study, enforcing the rules of the vote history.

    - A vote id already known (stored, or earlier in this import) is skipped when
      its content is the same, and refused when it differs.
    - A vote with ``supersedes`` replaces (or, with ``retract``, withdraws) only
      the current head of the chain of the same annotator on the same item of the
      same study; naming a vote that is unknown, of another annotator or item, or
      already replaced, is refused.
    - A vote without ``supersedes`` starts a chain: refused if the annotator
      already has one on that item.
    """

    def __init__(
        self, s: Session, study_id: int, study: str, fields: dict[str, str] | None = None
    ) -> None:
        self.s = s
        self.study_id = study_id
        self.study = study
        self.fields = fields or _VOTE_FILE_FIELDS
        rows = repo.study_vote_chain(s, study_id)
        self.votes: dict[str, _Known] = {}
        self.superseded: dict[str, str] = {}
        for u, a, i, choice, swapped, ms, fast, created, sup in rows:
            self.votes[u] = _Known(
                int(a), int(i), choice, bool(swapped), ms, bool(fast), _naive_utc(created), sup
            )
            if sup:
                self.superseded[sup] = u
        self.heads: dict[tuple[int, int], str] = {}
        for u, k in self.votes.items():
            if u not in self.superseded:
                self.heads[(k.annotator, k.item)] = u
        self.elsewhere: dict[str, str] = {}
        """Vote ids of this import stored in another study (uuid -> study name)."""
        self.annotators: dict[str, int] = {}
        self.annotator_names: dict[int, str] = {}
        self.batch: list[tuple[Any, ...]] = []

    def look_elsewhere(self, uuids: set[str]) -> None:
        """Find which of ``uuids`` (not of this study) are stored in another study."""
        todo = sorted(u for u in uuids if u not in self.votes)
        self.elsewhere.update(repo.vote_studies(self.s, todo))

    def annotator(self, name: str) -> int:
        if name not in self.annotators:
            aid = repo.annotator_id(self.s, name)
            assert aid is not None
            self.annotators[name] = aid
            self.annotator_names[aid] = name
        return self.annotators[name]

    def _who(self, aid: int) -> str:
        if aid not in self.annotator_names:
            self.annotator_names.update(repo.annotator_names(self.s, [aid]))
        return one_line(self.annotator_names.get(aid, f"#{aid}"))

    def _same(
        self,
        old: _Known,
        new: _Known,
        *,
        left_given: bool,
        fast_given: bool,
    ) -> tuple[str, object, object] | None:
        """The first field where ``new`` contradicts ``old``, or None if it does not."""
        checks: list[tuple[str, object, object, bool]] = [
            ("annotator", old.annotator, new.annotator, True),
            ("item_id", old.item, new.item, True),
            ("choice", old.choice, new.choice, True),
            ("supersedes", old.supersedes, new.supersedes, True),
            ("left", old.swapped, new.swapped, left_given),
            ("response_ms", old.response_ms, new.response_ms, new.response_ms is not None),
            ("fast", old.fast, new.fast, fast_given),
            ("created_at", old.created_at, new.created_at, new.created_at is not None),
        ]
        for name, a, b, given in checks:
            if given and a != b:
                return name, a, b
        return None

    def add(
        self,
        *,
        vote_uuid: str,
        annotator: str,
        item_id: int,
        choice: str,
        swapped: bool | None,
        response_ms: int | None,
        fast: bool | None,
        created_at: datetime | None,
        supersedes: str | None,
        where: tuple[Path, int],
        selection_probability: float | None = None,
    ) -> bool:
        """Check one vote against the history and queue it; False if already stored.

        ``selection_probability`` (an adaptive schedule's, from an export) is stored with
        a new vote; a vote already stored keeps its own (it is not compared).
        """
        path, line = where
        f = self.fields
        aid = self.annotator(annotator)
        new = _Known(
            aid,
            item_id,
            choice,
            bool(swapped),
            response_ms,
            bool(fast),
            _naive_utc(created_at),
            supersedes,
        )
        old = self.votes.get(vote_uuid)
        if old is not None:
            diff = self._same(old, new, left_given=swapped is not None, fast_given=fast is not None)
            if diff is None:
                return False
            name, was, now = diff
            if name == "annotator":
                was, now = self._who(int(was)), annotator  # type: ignore[call-overload]
            elif name == "item_id":
                was, now = "another item", "this one"
            raise InputFileError(
                path,
                f"vote {vote_uuid} is already stored with {name} {was!s:.40} (here: {now!s:.40})",
                line=line,
                field=f.get(name, name),
                expected=_UNCHANGED,
            )
        if vote_uuid in self.elsewhere:
            raise InputFileError(
                path,
                f"vote {vote_uuid} is already stored in study "
                f"{one_line(self.elsewhere[vote_uuid])!r}",
                line=line,
                field=f["vote_id"],
                expected="a new vote id for a vote of this study",
            )
        key = (aid, item_id)
        if supersedes is None:
            if choice == Choice.RETRACT:
                raise InputFileError(
                    path,
                    "a retraction that names no vote",
                    line=line,
                    field=f["supersedes"],
                    expected="the vote_id of the vote it withdraws",
                )
            if key in self.heads:
                raise InputFileError(
                    path,
                    f"annotator {one_line(annotator)!r} already has a vote on this item in the "
                    f"database (vote {self.heads[key]}); vote {vote_uuid} would start a second "
                    "one",
                    line=line,
                    field=f["vote_id"],
                    expected="votes not yet in the database, or the same vote ids (the database "
                    "was left unchanged)",
                )
        else:
            self._check_supersedes(new, vote_uuid, annotator, path, line)
        self.votes[vote_uuid] = new
        self.heads[key] = vote_uuid
        if supersedes is not None:
            self.superseded[supersedes] = vote_uuid
        created = created_at or datetime.now(UTC)
        self.batch.append(
            (
                vote_uuid,
                self.study_id,
                aid,
                item_id,
                choice,
                new.swapped,
                response_ms,
                new.fast,
                created.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" "),
                supersedes,
                selection_probability,
            )
        )
        return True

    def _check_supersedes(
        self, new: _Known, vote_uuid: str, annotator: str, path: Path, line: int
    ) -> None:
        sup = new.supersedes
        assert sup is not None
        field_name = self.fields["supersedes"]
        target = self.votes.get(sup)
        expected = "the vote_id of the current vote of the same annotator on the same item"
        if target is None:
            where = (
                f"a vote of study {one_line(self.elsewhere[sup])!r}"
                if sup in self.elsewhere
                else "no vote in the database or earlier in this import"
            )
            raise InputFileError(
                path,
                f"vote {vote_uuid} supersedes {sup}, {where}",
                line=line,
                field=field_name,
                expected=expected + " of this study (import the whole vote_log, which holds "
                "every vote a chain names)",
            )
        if target.annotator != new.annotator:
            raise InputFileError(
                path,
                f"vote {vote_uuid} of annotator {one_line(annotator)!r} supersedes vote {sup} "
                f"of annotator {self._who(target.annotator)!r}",
                line=line,
                field=field_name,
                expected=expected,
            )
        if target.item != new.item:
            raise InputFileError(
                path,
                f"vote {vote_uuid} supersedes vote {sup}, which is on another item",
                line=line,
                field=field_name,
                expected=expected,
            )
        if sup in self.superseded:
            raise InputFileError(
                path,
                f"vote {vote_uuid} replaces vote {sup}, which vote "
                f"{self.superseded[sup]} already replaces",
                line=line,
                field=field_name,
                expected="one history per annotator and item (this file conflicts with the "
                "database; the database was left unchanged)",
            )
        if new.choice == Choice.RETRACT and target.choice == Choice.RETRACT:
            raise InputFileError(
                path,
                f"retraction {vote_uuid} withdraws {sup}, which is itself a retraction",
                line=line,
                field=field_name,
                expected=expected,
            )
        head = self.heads.get((new.annotator, new.item))
        if head != sup:
            raise InputFileError(
                path,
                f"vote {vote_uuid} supersedes vote {sup}, which is not the current vote "
                f"(vote {head} is)",
                line=line,
                field=field_name,
                expected=expected,
            )

    def flush(self) -> None:
        if not self.batch:
            return
        _check_vote_parents(
            self.s, self.study_id, [r[2] for r in self.batch], [r[3] for r in self.batch]
        )
        try:
            repo.bulk_insert_votes(self.s, self.batch)
        except repo.integrity_errors() as err:
            raise AnnotateError(
                f"the votes conflict with the database: {err}", title="Cannot import"
            ) from err
        self.batch.clear()


def _apply_votes(s: Session, records: list[VoteRecord], report: ImportReport) -> None:
    by_study: dict[str, list[VoteRecord]] = defaultdict(list)
    for r in records:
        by_study[r.study].append(r)
    for name, recs in by_study.items():
        st = repo.get_study(s, name)
        if st is None:
            r0 = recs[0]
            raise InputFileError(
                r0.path,
                f"unknown study {name!r}",
                line=r0.line,
                field="study",
                expected="a study in the database (import its study folder first, or import "
                "the whole export folder)",
            )
        _check_study_identity(s, st, recs, report)
        items = repo.item_ids(s, st.id)
        allowed = (*choices_for(st.kind), Choice.RETRACT)
        writer = _VoteWriter(s, st.id, name)
        writer.look_elsewhere({r.uuid for r in recs} | {r.supersedes for r in recs if r.supersedes})
        ordered = _parents_first(recs)
        # every annotator looked up (or created) at once, in the order the loop meets them:
        # the same ids as one by one, without a scan of the stored names per new name
        names = list(dict.fromkeys(r.annotator for r in ordered))
        writer.annotators.update(zip(names, repo.annotator_ids(s, names), strict=True))
        for r in ordered:
            if r.item_key not in items:
                raise InputFileError(
                    r.path,
                    f"unknown item {one_line(r.item_key)[:60]!r} in study {name!r}",
                    line=r.line,
                    field="item_id",
                    expected="a pair or battle id of that study",
                )
            if r.choice not in allowed:
                raise InputFileError(
                    r.path,
                    f"{r.choice!r} in a {st.kind} study",
                    line=r.line,
                    field="choice",
                    expected=", ".join(allowed),
                )
            added = writer.add(
                vote_uuid=r.uuid,
                annotator=r.annotator,
                item_id=items[r.item_key],
                choice=r.choice,
                swapped=None if r.left is None else r.left in _SECOND_HALVES,
                response_ms=r.response_ms,
                fast=r.fast,
                created_at=r.created_at,
                supersedes=r.supersedes,
                where=(r.path, r.line),
                selection_probability=r.selection_probability,
            )
            if added:
                report.votes_added += 1
            else:
                report.votes_skipped += 1
        writer.flush()


def _check_study_identity(
    s: Session, st: repo.StudyRow, recs: list[VoteRecord], report: ImportReport
) -> None:
    """Refuse votes exported from another study of the same name; note unchecked ones."""
    from annotate.services.exporting import study_fingerprint

    stored = study_fingerprint(s, st)
    unchecked: dict[Path, int] = defaultdict(int)
    for r in recs:
        if r.study_fingerprint is None:
            unchecked[r.path] += 1
        elif r.study_fingerprint != stored:
            raise InputFileError(
                r.path,
                f"these votes are for another study also named {st.name!r} (its fingerprint "
                f"{r.study_fingerprint[:12]}... differs from the stored study's {stored[:12]}...)",
                line=r.line,
                field="study_fingerprint",
                expected="votes of the stored study; to keep both, rename the other study "
                "(name in its study.toml and the study column of its vote files) and import "
                "its export folder, or compare the two items files first",
            )
    for path, n in unchecked.items():
        report.notes.append(
            f"{one_line(path)}: {n} vote(s) for study {st.name!r} carry no study_fingerprint: "
            "their items were matched by key only"
        )


def _parents_first(recs: list[VoteRecord]) -> list[VoteRecord]:
    """``recs`` reordered so that a vote comes after the vote it supersedes, in linear time.

    Records keep their file order except that a record's not yet emitted
    ancestors (within ``recs``) are emitted just before it; a cycle of
    ``supersedes`` is an error.
    """
    by_uuid = {r.uuid: r for r in recs}
    done: set[str] = set()
    out: list[VoteRecord] = []
    for r in recs:
        if r.uuid in done:
            continue
        path: list[VoteRecord] = []
        on_path: set[str] = set()
        cur: VoteRecord | None = r
        while cur is not None and cur.uuid not in done:
            if cur.uuid in on_path:
                raise InputFileError(
                    cur.path,
                    "votes supersede each other in a cycle",
                    line=cur.line,
                    field="supersedes",
                    expected="each chain to start with a vote that supersedes nothing",
                )
            on_path.add(cur.uuid)
            path.append(cur)
            cur = by_uuid.get(cur.supersedes) if cur.supersedes is not None else None
        for c in reversed(path):
            done.add(c.uuid)
            out.append(c)
    return out


def _apply_arena(
    s: Session, name: str, records: formats.ArenaRecords, report: ImportReport
) -> None:
    st = repo.get_study(s, name)
    if st is None:
        sid = repo.insert_study(
            s,
            name=name,
            kind="arena",
            title=f"Imported from {records.path.name}",
            description=f"{records.layout} records",
            settings=StudySettings.for_kind("arena"),
            fingerprint="",
        )
        report.studies_created.append(name)
    else:
        if st.kind != "arena":
            raise InputFileError(
                records.path,
                f"study {name!r} is a {st.kind} study",
                expected="an arena study name (pass --study NAME)",
            )
        sid = st.id
    existing = repo.battle_models(s, sid)
    items = repo.item_ids(s, sid)
    pos = len(items)
    prompt_ids = _arena_texts(s, sid, records)
    flipped: set[str] = set()  # stored with the pair the other way round
    for key, (a, b, line) in records.battles.items():
        if key in existing:
            _, ea, eb = existing[key]
            if (ea, eb) == (b, a) and not key.startswith("record-"):
                flipped.add(key)
            elif (ea, eb) != (a, b):
                raise InputFileError(
                    records.path,
                    f"battle {one_line(key)[:60]!r} is {a!r} vs {b!r} here but {ea!r} vs {eb!r} "
                    f"in study {name!r}",
                    line=line,
                    expected="the same models as the stored battle",
                )
            continue
        item = repo.insert_item(s, sid, key, pos)
        pos += 1
        repo.insert_battle(s, item, prompt_ids.get(records.battle_prompts.get(key, "")), a, b)
        items[key] = item
        report.items_added += 1
    who, key_field = (
        ("judge", "question_id") if records.layout == "chatbot-arena" else ("worker", "id")
    )
    writer = _VoteWriter(
        s,
        sid,
        name,
        {"annotator": who, "vote_id": who, "item_id": key_field, "choice": "winner"},
    )
    for v in records.votes:
        flip = v.item_key in flipped
        added = writer.add(
            vote_uuid=v.uuid,
            annotator=v.annotator,
            item_id=items[v.item_key],
            choice=formats.MIRRORED[Choice(v.choice)] if flip else v.choice,
            swapped=None if v.swapped is None else v.swapped != flip,
            response_ms=None,
            fast=None,
            created_at=v.created_at,
            supersedes=None,
            where=(records.path, v.line),
        )
        if added:
            report.votes_added += 1
        else:
            report.votes_skipped += 1
    writer.flush()


def _arena_texts(s: Session, sid: int, records: formats.ArenaRecords) -> dict[str, int]:
    """Store the prompts and responses of ``records`` the study lacks; prompt key -> id."""
    ids = repo.prompt_ids(s, sid)
    have = repo.response_keys(s, sid)
    for key, (body, _) in records.prompts.items():
        if key not in ids:
            ids[key] = repo.insert_prompt(s, sid, key, body, "")
    for (key, model), (body, _) in records.responses.items():
        if (key, model) not in have:
            repo.insert_response(s, ids[key], model, body)
    return ids


def _apply_harness(
    s: Session,
    study: str | None,
    samples: list[formats.HarnessSample],
    path: Path,
    report: ImportReport,
) -> str:
    tasks = sorted({x.task for x in samples})
    name = study or (safe_study_name(tasks[0], "lm-eval") if len(tasks) == 1 else "lm-eval")
    st = repo.get_study(s, name)
    if st is None:
        sid = repo.insert_study(
            s,
            name=name,
            kind="difficulty",
            title=f"lm-evaluation-harness: {', '.join(tasks)}",
            description="response matrix imported from --log_samples output",
            settings=StudySettings.for_kind("difficulty"),
            fingerprint="",
        )
        report.studies_created.append(name)
    else:
        if st.kind != "difficulty":
            raise InputFileError(
                path,
                f"study {name!r} is an arena study",
                expected="a difficulty study name (pass --study NAME)",
            )
        sid = st.id
    qids = repo.question_ids(s, sid)
    new_q: dict[str, formats.HarnessSample] = {}
    for x in samples:
        key = f"{x.task}/{x.doc_id}"
        if key not in qids and key not in new_q:
            new_q[key] = x
    qids.update(
        repo.insert_questions(s, sid, [(k, x.task, x.text, x.choices) for k, x in new_q.items()])
    )
    stored = repo.question_scores(s, sid)
    rows = []
    for x in samples:
        qid = qids[f"{x.task}/{x.doc_id}"]
        prev = stored.get((qid, x.model))
        if prev is not None:
            if abs(prev - x.score) > 1e-12:
                raise InputFileError(
                    x.path,
                    f"model {x.model!r} already has score {prev} on {x.task}/{x.doc_id}",
                    line=x.line,
                    field="doc_id",
                    expected="the same score as stored, or a different --model name",
                )
            continue
        rows.append((qid, x.model, x.score))
    report.scores_added += repo.insert_scores(s, rows)
    models = sorted({x.model for x in samples})
    report.notes.append(
        f"{len(samples)} samples of {len(models)} model(s) ({', '.join(models)}) "
        f"on {len(tasks)} task(s) into study {name!r}"
    )
    report.notes.extend(formats.harness_summary(samples))  # which metric and filter
    return name


class _SlowPathError(Exception):
    """A vote table needs the per-row rules: votes stored already, or a row they refuse."""


_INSERT_ROWS = 50_000
"""Rows per ``executemany`` of the vote-table fast path (bounds the Python objects alive)."""


@dataclass(frozen=True)
class _TablePlan:
    """One study's share of a vote table, checked and ready to insert."""

    study_id: int
    rows: Any
    """Row numbers in the table, file order (``numpy`` int64)."""
    item_ids: Any
    """Stored item id of each of ``rows`` (``numpy`` int64)."""
    annotators: list[str]
    """Distinct normalised annotator names, in order of first appearance."""
    annotator_codes: Any
    """Index into ``annotators`` of each of ``rows`` (``numpy`` int64)."""


def _apply_vote_table(s: Session, table: VoteTable, report: ImportReport) -> None:
    """Import a vote file read column-wise: check in vectorised passes, then bulk insert.

    Takes the votes when the rules of :class:`_VoteWriter` can be checked without
    comparing rows: the file's studies hold no stored votes, no vote id is stored
    elsewhere, and every ``supersedes`` names the current vote of the same annotator
    and item earlier in the file. Then the result is the one the per-row path gives
    (same rows, same order, same annotator ids). Anything else (votes already stored,
    or a row the rules refuse) goes through the per-row path, before anything of this
    file is written, which raises naming the first bad row.
    """
    import numpy as np
    import pyarrow as pa

    try:
        plans, notes = _plan_vote_table(s, table)
    except _SlowPathError:
        _apply_votes(s, parse_vote_file(table.path), report)
        return
    report.notes.extend(notes)
    pa.default_memory_pool().release_unused()  # the plan's temporaries (see the reader)
    now = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")
    aids = [
        np.asarray(repo.annotator_ids(s, plan.annotators), dtype=np.int64)[plan.annotator_codes]
        for plan in plans
    ]
    for plan, ann in zip(plans, aids, strict=True):
        _check_vote_parents(s, plan.study_id, ann, plan.item_ids)

    def packed() -> Iterator[repo.PackedVotes]:
        for plan, ann in zip(plans, aids, strict=True):
            for start in range(0, len(plan.rows), _PACKED_ROWS):
                stop = start + _PACKED_ROWS
                yield _pack_votes(table, plan, ann, start, stop, now)

    def batches() -> Iterator[list[tuple[Any, ...]]]:
        for plan, ann in zip(plans, aids, strict=True):
            for start in range(0, len(plan.rows), _INSERT_ROWS):
                yield _vote_tuples(table, plan, ann, start, start + _INSERT_ROWS, now)

    try:
        probability = table.selection_probability
        given = probability is not None and probability.null_count < len(probability)
        # a probability goes in as a Python float: exact, where SQLite's text-to-real
        # conversion of a packed record need not be
        rows = _made_ahead(packed()) if _packed_insert(s) and not given else batches()
        report.votes_added += repo.bulk_insert_vote_batches(s, rows, expected=len(table))
    except repo.integrity_errors() as err:
        raise _bulk_conflict(s, table, err) from err


_T = TypeVar("_T")


def _made_ahead(items: Iterator[_T]) -> Iterator[_T]:
    """The items of ``items`` in order, each next one made in a worker thread while the
    caller uses the current one (SQLite inserts a batch with the GIL released, while
    numpy and pyarrow pack the next: on two cores the packing leaves the critical path).

    At most one item waits made; an exception of the worker is raised here, and a
    caller that stops early (an exception of its own) stops the worker before going on.
    The worker starts with the first item asked for (:class:`_Ahead` starts at once).
    """
    ahead = _Ahead(items, start=False)
    try:
        yield from ahead
    finally:
        ahead.close()


class _Ahead(Iterator[_T]):
    """The items of ``items`` made in a worker thread, at most one ahead of the caller
    (:func:`_made_ahead`), the worker started at once (``start``) or with the first
    ``next``. :meth:`close` stops the worker; call it on every exit."""

    def __init__(self, items: Iterator[_T], *, start: bool = True) -> None:
        import queue
        import threading

        self._ready: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._end = object()
        self._items = items
        self._worker = threading.Thread(target=self._work, name="annotate-pack-votes", daemon=True)
        self._done = False
        if start:
            self._worker.start()

    def _hand_over(self, entry: tuple[bool, Any]) -> bool:
        import queue

        while not self._stop.is_set():
            try:
                self._ready.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _work(self) -> None:
        try:
            for item in self._items:
                if not self._hand_over((True, item)):
                    return
            self._hand_over((True, self._end))
        except BaseException as err:  # raised again in the caller's thread
            self._hand_over((False, err))

    def __next__(self) -> _T:
        if self._done:
            raise StopIteration
        import queue

        if self._worker.ident is None:
            self._worker.start()
        while True:
            try:
                ok, item = self._ready.get(timeout=0.05)
                break
            except queue.Empty:
                # a worker stopped (closed) gives nothing more: never wait for it
                if not self._worker.is_alive() and self._ready.empty():
                    self._done = True
                    raise RuntimeError("the worker was stopped") from None
        if not ok:
            self._done = True
            raise item
        if item is self._end:
            self._done = True
            raise StopIteration
        return item  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop the worker (it drops what it made) and wait for it."""
        self._stop.set()
        if self._worker.ident is not None:
            self._worker.join()


def _packed_insert(s: Session) -> bool:
    """Whether the vote-table fast path inserts :class:`~repo.PackedVotes` (SQLite) rather
    than row tuples (PostgreSQL, whose ``executemany`` is pipelined)."""
    return not repo.is_postgres(s)


_PACKED_ROWS = 100_000
"""Rows per statement of the packed (SQLite) insert: about 16 MB of records."""


def _pack_votes(
    table: VoteTable, plan: _TablePlan, ann: Any, start: int, stop: int, now: str
) -> repo.PackedVotes:
    """Rows ``start:stop`` of a study's share of the table as :class:`~repo.PackedVotes`:
    the values :func:`_apply_vote_table` would bind, written into fixed-width records
    with numpy and pyarrow (every value was checked by the fast path's reader)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = plan.rows[start:stop]
    n = len(rows)
    if n and int(rows[-1]) - int(rows[0]) == n - 1:
        # ascending row numbers (file order) with no gap: a slice of every column (no
        # copy), as for the usual one-study file and each chunk of a streamed import
        first = int(rows[0])

        def pick(col: Any) -> Any:
            return col.slice(first, n)
    else:
        take = pa.array(rows)

        def pick(col: Any) -> Any:
            return col.take(take)

    out = np.empty((n, repo.PACKED_VOTE_WIDTH), dtype=np.uint8)
    at = 0
    for name, w in repo.PACKED_VOTE_LAYOUT:
        cell = out[:, at : at + w]
        at += w
        if name == "uuid":
            cell[:] = _fixed_chars(pick(table.uuid), w)
        elif name == "annotator_id":
            cell[:] = _digits(ann[start:stop], w)
        elif name == "item_id":
            cell[:] = _digits(plan.item_ids[start:stop], w)
        elif name == "choice":
            code = pc.index_in(pick(table.choice), value_set=_packed_choices())
            if code.null_count:
                raise ValueError("a choice that is not one of repo.PACKED_CHOICES")
            cell[:] = _digits(code.to_numpy(zero_copy_only=False), w)
        elif name in ("swapped", "fast"):
            flag = pc.fill_null(pick(getattr(table, name)), False)
            cell[:, 0] = np.where(flag.to_numpy(zero_copy_only=False), ord("1"), ord("0"))
        elif name == "response_ms":
            ms = pick(table.response_ms)
            cell[:] = _digits(pc.fill_null(ms, 0).to_numpy(zero_copy_only=False), w)
            cell[pc.is_null(ms).to_numpy(zero_copy_only=False)] = np.frombuffer(
                repo.PACKED_NO_RESPONSE_MS, dtype=np.uint8
            )
        elif name == "created_at":
            cell[:] = _fixed_chars(pc.fill_null(pick(table.created_at), now), w)
        elif name == "supersedes":
            cell[:] = _fixed_chars(pc.fill_null(pick(table.supersedes), ""), w)
        else:  # pragma: no cover - the layout and this function change together
            raise AssertionError(f"no packing for {name!r}")
    # the matrix's own bytes (no copy: SQLite copies a bound blob anyway)
    return repo.PackedVotes(plan.study_id, out.data.cast("B") if n else b"", n)


def _packed_choices() -> Any:
    """:data:`repo.PACKED_CHOICES` as a ``pyarrow`` array (the value set of the digits)."""
    import pyarrow as pa

    return pa.array(repo.PACKED_CHOICES, pa.string())


def _fixed_chars(col: Any, width: int) -> Any:
    """An ASCII ``pyarrow`` string array (no nulls, no value longer than ``width``) as an
    ``(n, width)`` byte matrix, each value padded on the right with spaces."""
    import numpy as np

    n = len(col)
    if col.null_count:
        raise ValueError("a value is missing")
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int32)[col.offset : col.offset + n + 1]
    raw = np.frombuffer(col.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    size = np.diff(offsets)
    if n and int(size.max()) > width:
        raise ValueError(f"a value is longer than {width} bytes")
    if offsets[-1] - offsets[0] == n * width:  # every value ``width`` long: the bytes as they are
        return raw.reshape(n, width)
    # each value's bytes into a row of spaces: rows of a sliding window over the bytes
    # (padded to read past the last value), the bytes past a value's end made spaces
    buf = np.full(len(raw) + width, ord(" "), dtype=np.uint8)
    buf[: len(raw)] = raw
    out = np.lib.stride_tricks.sliding_window_view(buf, width)[offsets[:-1] - offsets[0]]
    out[np.arange(width) >= size[:, None]] = ord(" ")
    return out


def _digits(values: Any, width: int) -> Any:
    """Whole numbers from 0 to ``10**width - 1`` as an ``(n, width)`` matrix of ASCII digits,
    leading zeros included."""
    import numpy as np

    x = np.asarray(values, dtype=np.int64)
    if x.size and (x.min() < 0 or (width < 19 and x.max() >= 10**width)):
        raise ValueError(f"a number does not fit {width} digits")
    out = np.full((x.size, width), ord("0"), dtype=np.uint8)
    for k in range(width):
        if not x.any():  # the leading zeros are written already
            break
        x, digit = np.divmod(x, 10)
        out[:, width - 1 - k] = digit + ord("0")
    return out


_PG_DUPLICATE = re.compile(r"Key \((uuid|supersedes)\)=\((.*)\) already exists")
"""PostgreSQL's detail of a unique violation on the vote table, naming column and value."""


def _bulk_conflict(s: Session, table: VoteTable, err: BaseException) -> AnnotateError:
    """The one-line error for a bulk insert refused by a unique index of the vote table.

    The checks before the insert make this unexpected; it names the file row whose vote
    id (or ``supersedes``) is stored twice when it can find it, else the database's
    message. Runs in the failed transaction, which the caller rolls back.
    """
    import pyarrow.compute as pc

    msg = str(err)
    detail = getattr(getattr(err, "diag", None), "message_detail", None)
    pg = _PG_DUPLICATE.search(detail or "")
    value: str | None
    if pg is not None:  # PostgreSQL names both (its aborted transaction answers no query)
        column, value = pg.group(1), pg.group(2)
        msg = msg.splitlines()[0]
    else:
        column = next((c for c in ("uuid", "supersedes") if msg.endswith(f"vote.{c}")), None)
        value = None if column is None else repo.duplicate_vote_value(s, column)
    if column is None or value is None:
        return AnnotateError(f"the votes conflict with the database: {err}", title="Cannot import")
    col = table.uuid if column == "uuid" else table.supersedes
    hits = pc.indices_nonzero(pc.fill_null(pc.equal(col, value), False)).to_pylist()
    if not hits:
        return AnnotateError(f"the votes conflict with the database: {err}", title="Cannot import")
    # twice in the file: the second occurrence; once: it clashes with a stored vote
    row = hits[1] if len(hits) > 1 else hits[0]
    if column == "uuid":
        return InputFileError(
            table.path,
            f"vote {value} is already stored",
            line=row + 2,
            field="vote_id",
            expected="a new vote id (this file conflicts with the database; the database was "
            "left unchanged)",
        )
    return InputFileError(
        table.path,
        f"vote {value} is replaced twice",
        line=row + 2,
        field="supersedes",
        expected="one history per annotator and item (this file conflicts with the "
        "database; the database was left unchanged)",
    )


def _plan_vote_table(s: Session, t: VoteTable) -> tuple[list[_TablePlan], list[str]]:
    """Check a vote table against the rules of the vote history; :class:`_SlowPathError` if
    the per-row path is needed. Writes nothing."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    def codes(col: Any) -> tuple[list[Any], Any]:
        enc = pc.dictionary_encode(col)
        return enc.dictionary.to_pylist(), enc.indices.to_numpy(zero_copy_only=False).astype(
            np.int64
        )

    names, study_code = codes(t.study)
    ann_names, ann_code = codes(t.annotator)
    item_names, item_code = codes(t.item_key)
    choice = t.choice
    retract = pc.equal(choice, Choice.RETRACT.value).to_numpy(zero_copy_only=False)
    # chains: every supersedes names an earlier row of the same annotator, item and study
    has_sup = pc.is_valid(t.supersedes).to_numpy(zero_copy_only=False)
    child = np.flatnonzero(has_sup)
    if child.size:
        if t.supersedes_row is not None:
            target = t.supersedes_row[child]
        else:
            target = uuid_rows(t.uuid, None, t.supersedes.take(pa.array(child)))
        if np.any(target < 0):
            raise _SlowPathError  # names a stored vote, or none
        if (
            np.any(target >= child)
            or np.any(study_code[target] != study_code[child])
            or np.any(ann_code[target] != ann_code[child])
            or np.any(item_code[target] != item_code[child])
            or np.any(retract[target] & retract[child])
            or pc.count_distinct(t.supersedes).as_py() != child.size
        ):
            raise _SlowPathError
    roots = np.flatnonzero(~has_sup)
    if np.any(retract[roots]):
        raise _SlowPathError
    n_ann = int(ann_code.max()) + 1
    n_item = int(item_code.max()) + 1
    root_key = (study_code[roots] * n_ann + ann_code[roots]) * n_item + item_code[roots]
    if pd.Series(root_key).duplicated().any():
        raise _SlowPathError  # a second chain for one annotator and item
    total = repo.vote_count(s)
    if total and _any_stored(s, t.uuid, total):
        raise _SlowPathError  # a vote id stored already (here or in another study)
    plans: list[_TablePlan] = []
    notes: list[str] = []
    for j, name in enumerate(names):
        rows = np.flatnonzero(study_code == j)
        st = repo.get_study(s, name)
        if st is None:
            raise _SlowPathError
        sel = pa.array(rows)
        one = len(names) == 1  # the usual file: the study's rows are the table's (no copies)

        def mine(col: Any, sel: Any = sel, one: bool = one) -> Any:
            return col if one else col.take(sel)

        allowed = [c.value for c in (*choices_for(st.kind), Choice.RETRACT)]
        if not pc.all(pc.is_in(mine(choice), value_set=pa.array(allowed))).as_py():
            raise _SlowPathError
        from annotate.services.exporting import study_fingerprint

        fps = mine(t.study_fingerprint)
        stored_fp = study_fingerprint(s, st)
        if any(fp not in (None, stored_fp) for fp in pc.unique(fps).to_pylist()):
            raise _SlowPathError
        if fps.null_count:
            notes.append(
                f"{one_line(t.path)}: {fps.null_count} vote(s) for study {st.name!r} carry no "
                "study_fingerprint: their items were matched by key only"
            )
        if repo.study_has_votes(s, st.id):
            raise _SlowPathError
        items = repo.item_ids(s, st.id)
        # one study: its rows are the table's, their codes the table's
        keys, key_code = (item_names, item_code) if one else codes(t.item_key.take(sel))
        if any(k not in items for k in keys):
            raise _SlowPathError
        key_ids = np.array([items[k] for k in keys], dtype=np.int64)
        anns, a_code = (ann_names, ann_code) if one else codes(t.annotator.take(sel))
        plans.append(_TablePlan(st.id, rows, key_ids[key_code], anns, a_code))
    return plans, notes


def _any_stored(s: Session, uuids: Any, total: int) -> bool:
    """Whether any of ``uuids`` (a ``pyarrow`` string array) is a stored vote id."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if total <= 4 * len(uuids):
        stored = pa.array(repo.all_vote_uuids(s), pa.string())
        return bool(pc.any(pc.is_in(uuids, value_set=stored)).as_py())
    return repo.any_vote_stored(s, uuids.to_pylist())


# --- a large vote CSV imported while it is read -----------------------------------------

STREAM_MIN_ROWS = 200_000
"""A plain vote CSV (one the fast reader takes) of at least this many lines, named alone on
the command line, is imported while it is read (:func:`_import_streamed`)."""

STREAM_CHUNK_ROWS = 125_000
"""Lines per chunk of :func:`_import_streamed`: SQLite inserts a chunk while the next is
read, checked and packed in a worker thread."""

STREAM_FIRST_CHUNK_ROWS = 25_000
"""Lines of the first chunk (at most :data:`STREAM_CHUNK_ROWS`): nothing is inserted before
it is read, checked and packed, so a smaller one starts the pipeline sooner."""


class _StreamFallbackError(Exception):
    """The streamed import does not take the file: its transaction is rolled back and the
    file imported as before (which names a bad row, or takes the per-row path)."""

    def __init__(self, refused_rows: int = 0, refused_at: _RefusedAt | None = None) -> None:
        super().__init__(refused_rows)
        self.refused_rows = refused_rows
        """The file's rows, where the fast path's checks of a row refused it (as
        :class:`~annotate.services.votes_io.FastRead` says); else 0."""
        self.refused_at = refused_at
        """Where, when the fast path's checks of a row refused it."""


@dataclass
class _RefusedAt:
    """Where the streamed import met a row the fast path refuses (:func:`_raise_bad_row`)."""

    chunks: VoteCsvChunks
    chunk: int | None
    """The first chunk the fast path refused; None when every chunk passed its checks
    and a vote id repeats (found across the chunks)."""
    uuids: list[Any]
    """The vote ids of the chunks before it (``pyarrow`` arrays, one a chunk; every row of
    those chunks passed the fast path's checks of a row)."""
    hashes: list[Any]
    """Their 64-bit hashes (``numpy`` arrays, one a chunk)."""


def _import_streamed(
    engine: Engine,
    path: Path,
    *,
    fmt: str,
    study: str | None,
    progress: Callable[[int, int], None] | None,
) -> ImportReport | FastRead | None:
    """``annotate import PATH`` of one large plain vote CSV, reading and checking chunk
    ``k + 1`` (:func:`~annotate.services.votes_io.read_vote_chunks`, in a worker thread)
    while SQLite inserts chunk ``k``; None when it does not apply (then the caller imports
    the file as before).

    The result is the import's (same rows in the same order, same annotator ids, same
    report): the file goes in only when every row passes the checks of the fast path
    (:func:`_apply_vote_table`), the checks across rows (distinct vote ids, each
    ``supersedes`` naming the current vote of the same annotator and item earlier in the
    file, one chain per annotator and item) made on the whole file before the indexes are
    rebuilt and the transaction commits. Any row the fast path would not take rolls the
    whole transaction back (the database unchanged) and returns None: the usual import
    then reads the file again and reports the first bad row, as it always did; where a
    row failed the fast path's checks, what the fast path made of the file instead
    (:class:`~annotate.services.votes_io.FastRead`, for :func:`classify`).
    """
    if fmt not in ("auto", "votes") or engine.url.get_backend_name() != "sqlite":
        return None
    study = _checked_study_option(path, study)  # what classify checks first
    if not path.is_file() or path.suffix.lower() != ".csv" or path.name.startswith("samples_"):
        return None
    if fmt == "auto":
        _ = study or safe_study_name(path.stem)  # classify derives it before reading
    chunks = open_vote_chunks(
        path, STREAM_CHUNK_ROWS, min(STREAM_FIRST_CHUNK_ROWS, STREAM_CHUNK_ROWS)
    )
    if chunks is None or len(chunks) < STREAM_MIN_ROWS:
        return None
    report = ImportReport()
    try:
        with _vote_import_session(engine, len(chunks)) as s:
            _insert_vote_chunks(s, chunks, report)
            if progress is not None:
                progress(1, 1)
    except _StreamFallbackError as err:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
        _trim_heap()  # the attempt's memory, before the usual import reads the file again
        if err.refused_at is not None:
            _raise_bad_row(err.refused_at)  # the usual import's error, from the bad chunk on
        # a refused row: the usual import need not read the file with the fast path again
        return FastRead(None, err.refused_rows) if err.refused_rows else None
    from annotate.services.identity import import_notes

    report.notes.extend(import_notes(engine, []))  # as import_paths: no study created
    return report


def _raise_bad_row(at: _RefusedAt) -> None:
    """Raise the error :func:`~annotate.services.votes_io.check_vote_file` raises for the
    file of a streamed import the fast path refused (the first bad row, by the same
    checks, in file order), checking row by row only from near that row on.

    Every row of the chunks before the refused one passed the fast path's checks of a
    row, which take no row the per-row checks refuse, and parsed into the header's cells
    (no shape error); what they can still hold is a vote id twice (the chunks' ids are
    compared only at the end). The refused chunk is read again in parts of
    :data:`NARROW_ROWS` lines by the same checks, up to the first part they refuse. So the
    first bad row is in that part or after it, or is the first row whose vote id an
    earlier row has, if that comes first: the check row by row starts at that part (or
    that row), knowing the vote ids before it that the rows after it name again.
    Returns when no row from there on is refused (a file only the per-row path reads).
    """
    import numpy as np
    import pyarrow as pa

    from annotate.services.textfiles import csv_rows_from
    from annotate.services.votes_io import check_vote_rows

    chunks = at.chunks
    with chunks.path.open("rb") as fh:
        body = 3 if fh.read(3) == b"\xef\xbb\xbf" else 0
    body += len(",".join(chunks.header).encode()) + 1  # where the rows start in the file
    # parts whose rows passed the fast checks: (their bytes after the header, ids, hashes)
    parts = [
        (chunks.bounds[k], ids, key)
        for k, (ids, key) in enumerate(zip(at.uuids, at.hashes, strict=True))
    ]
    if at.chunk is not None:  # the refused chunk's parts up to the first refused
        parts.extend(_passing_parts(chunks, body, *chunks.bounds[at.chunk]))
    ids = pa.concat_arrays([p[1] for p in parts]) if parts else pa.array([], pa.string())
    hashes = np.concatenate([p[2] for p in parts]) if parts else None
    start = _first_repeat(ids, hashes)  # the first bad row, if it comes first
    if start is not None:
        offset = _row_offset(chunks, body, parts, start)
    else:  # the first part not known to pass
        start = len(ids)
        offset = parts[-1][0][1] if parts else 0
    with chunks.path.open("rb") as fh:  # the file from that row on
        fh.seek(body + offset)
        tail = fh.read()
    if not tail:
        return
    seen = _ids_seen_again(ids.slice(0, start), tail, chunks.header)
    del ids, hashes, parts
    text = tail.decode("utf-8")
    del tail
    check_vote_rows(chunks.path, csv_rows_from(chunks.path, text, chunks.header, start + 2), seen)


NARROW_ROWS = 8192
"""Lines of each part of a refused chunk that :func:`_raise_bad_row` checks again with the
fast path's checks, to start the check row by row near the bad row."""


def _passing_parts(
    chunks: VoteCsvChunks, body: int, a: int, b: int
) -> Iterator[tuple[tuple[int, int], Any, Any]]:
    """The parts of :data:`NARROW_ROWS` lines of the rows at bytes ``a:b`` after the header
    (which ends at byte ``body`` of the file) that pass the fast path's checks of a row, up
    to the first that does not: (their bytes after the header, vote ids, their hashes)."""
    import numpy as np
    import pyarrow as pa

    from annotate.services.votes_io import read_vote_chunks

    data = _file_bytes(chunks, body, a, b)
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n")) + 1
    if not ends.size or ends[-1] != len(data):
        ends = np.append(ends, len(data))  # a last line without its line end
    cuts = ends[NARROW_ROWS - 1 :: NARROW_ROWS]
    if not cuts.size or cuts[-1] != len(data):
        cuts = np.append(cuts, len(data))
    firsts = np.concatenate([[0], cuts[:-1]])
    lines = np.diff(np.concatenate([[0], np.searchsorted(ends, cuts, side="right")]))
    bounds = [(int(x), int(y)) for x, y in zip(firsts, cuts, strict=True)]
    part = VoteCsvChunks(
        chunks.path, pa.py_buffer(data), chunks.header, bounds, lines.tolist(), int(lines.sum())
    )
    del data
    try:
        for (x, y), (t, key) in zip(bounds, read_vote_chunks(part), strict=False):
            yield (a + x, a + y), t.uuid, key
    except _NotFastError:
        return


def _file_bytes(chunks: VoteCsvChunks, body: int, a: int, b: int) -> bytes:
    """Bytes ``a:b`` after the header (which ends at byte ``body`` of the file)."""
    with chunks.path.open("rb") as fh:
        fh.seek(body + a)
        return fh.read(b - a)


def _row_offset(
    chunks: VoteCsvChunks, body: int, parts: list[tuple[tuple[int, int], Any, Any]], row: int
) -> int:
    """Byte after the header where row ``row`` of ``parts`` (:func:`_raise_bad_row`) starts."""
    import numpy as np

    for (a, b), ids, _ in parts:
        if row < len(ids):
            if not row:
                return a
            data = np.frombuffer(_file_bytes(chunks, body, a, b), dtype=np.uint8)
            return a + int(np.flatnonzero(data == ord("\n"))[row - 1]) + 1
        row -= len(ids)
    raise AssertionError("a row beyond the parts")


def _first_repeat(ids: Any, hashes: Any) -> int | None:
    """The first row of ``ids`` (a ``pyarrow`` string array) whose vote id an earlier row
    has, if any; ``hashes``: their 64-bit hashes (equal ids, equal hashes)."""
    import numpy as np

    if hashes is None or len(hashes) < 2:
        return None
    order = np.argsort(hashes, kind="stable")  # equal hashes: in row order
    same = hashes[order[1:]] == hashes[order[:-1]]
    found: int | None = None
    for k in np.flatnonzero(same):  # (few: equal ids, or a rare collision)
        row = int(order[k + 1])
        if found is not None and row >= found:
            continue
        j = k  # the earlier rows of the same hash
        while j >= 0 and hashes[order[j]] == hashes[row]:
            if ids[int(order[j])].as_py() == ids[row].as_py():
                found = row
                break
            j -= 1
    return found


def _ids_seen_again(before: Any, tail: bytes, header: list[str]) -> dict[str, int]:
    """The vote ids of the rows ``before`` (distinct, each as written: a ``pyarrow`` string
    array of the file's first rows, from line 2) that a row of ``tail`` (the file's bytes
    after them, a plain CSV without its header) names again, each with its line: the ids
    the per-row check must know to name a vote id twice in ``tail`` as it would have."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    if not len(before) or not tail:
        return {}
    try:  # the vote id cells (rows of another length skipped: their shape is the error)
        again = pacsv.read_csv(
            pa.BufferReader(tail),
            read_options=pacsv.ReadOptions(column_names=header),
            parse_options=pacsv.ParseOptions(
                quote_char=False, double_quote=False, invalid_row_handler=lambda _: "skip"
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=["vote_id"],
                column_types={"vote_id": pa.string()},
                strings_can_be_null=False,
            ),
        ).column("vote_id")
    except pa.ArrowInvalid:
        again = None
    if again is None:  # (not expected) every id before, as the per-row check holds them
        named = before
    else:
        again = again.combine_chunks()
        odd = pc.invert(pc.match_substring_regex(again, _UUID_PATTERN))
        # the per-row check strips a vote id: the stripped forms too (Python's strip)
        stripped = pa.array([v.strip() for v in again.filter(odd).to_pylist()], pa.string())
        named = pa.concat_arrays([again.filter(pc.invert(odd)), stripped])
    mask = pc.is_in(before, value_set=named)
    lines = np.flatnonzero(mask.to_numpy(zero_copy_only=False)) + 2
    return dict(zip(before.filter(mask).to_pylist(), lines.tolist(), strict=True))


_UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
"""An exact vote id (no spaces around it)."""


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). A streamed attempt that is rolled back frees ~850 MB for a million rows
    (arrays, records, the file's bytes) that glibc would keep for later allocations: the
    usual import that follows would then peak ~1.2 GB instead of under 1 GB."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc (or no C library by name)
        return
    trim(0)


def _first_study(chunks: VoteCsvChunks) -> str:
    """The study named on the first row of ``chunks`` (:class:`_StreamFallbackError` if
    it is no study name: the usual path names the row)."""
    first = chunks.data.slice(0, min(chunks.data.size, 1 << 16)).to_pybytes()
    cells = first.split(b"\n", 1)[0].decode("utf-8", "replace").split(",")
    if len(cells) != len(chunks.header):
        raise _StreamFallbackError
    try:
        return check_study_name(cells[chunks.header.index("study")].strip())
    except InvalidNameError:
        raise _StreamFallbackError from None


@dataclass
class _ChunkState:
    """What :func:`_insert_vote_chunks` keeps of the chunks read so far, for the checks
    across rows at the end (arrays of a few bytes per row)."""

    hashes: list[Any] = field(default_factory=list)
    uuids: list[Any] = field(default_factory=list)
    annotator_codes: list[Any] = field(default_factory=list)
    annotator_ids: list[Any] = field(default_factory=list)
    item_ids: list[Any] = field(default_factory=list)
    retract: list[Any] = field(default_factory=list)
    children: list[Any] = field(default_factory=list)
    """Rows (of the file) that have ``supersedes``."""
    supersedes: list[Any] = field(default_factory=list)
    """Their ``supersedes``."""
    rows: int = 0
    no_fingerprint: int = 0


def _insert_vote_chunks(s: Session, chunks: VoteCsvChunks, report: ImportReport) -> None:
    """Check and insert the chunks of a vote CSV into the open transaction (see
    :func:`_import_streamed`); :class:`_StreamFallbackError` when the fast path does not
    take the file."""
    name = _first_study(chunks)
    # the first chunks are read and checked (a worker thread) while the database is asked
    read = _Ahead(read_vote_chunks(chunks))
    try:
        _insert_read_chunks(s, chunks, name, read, report)
    finally:
        read.close()


def _insert_read_chunks(
    s: Session, chunks: VoteCsvChunks, name: str, read: Iterator[Any], report: ImportReport
) -> None:
    """:func:`_insert_vote_chunks` of the chunks ``read`` yields (checked VoteTables)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from annotate.services.exporting import study_fingerprint

    st = repo.get_study(s, name)
    if st is None or repo.study_has_votes(s, st.id):
        raise _StreamFallbackError
    total = repo.vote_count(s)
    if total > 4 * len(chunks):
        raise _StreamFallbackError  # (the usual path asks the database row by row)
    stored = pa.array(repo.all_vote_uuids(s), pa.string()) if total else None
    allowed = pa.array([c.value for c in (*choices_for(st.kind), Choice.RETRACT)], pa.string())
    stored_fp = study_fingerprint(s, st)
    items = repo.item_ids(s, st.id)
    item_keys = pa.array(list(items), pa.string())
    item_ids = np.fromiter(items.values(), dtype=np.int64, count=len(items))
    exact, legacy, last = repo.annotator_lookup(s)
    stored_last = last  # the worker counts ``last`` on as it gives new annotators ids
    given_ids: dict[str, int] = {}
    """Annotator name -> the id it has or (new) will get, in order of first appearance."""
    codes: dict[str, int] = {}
    """Annotator name -> its code: its place in order of first appearance."""
    now = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")
    packed = _packed_insert(s)
    state = _ChunkState()

    def checked_chunk(t: VoteTable, key: Any) -> tuple[Any, list[str], list[int]]:
        """Chunk ``t`` checked (all but the checks across rows) and ready to insert, with
        the annotators it adds and the ids they will get (worker thread, no database)."""
        nonlocal last
        n = len(t)
        studies = pc.unique(t.study).to_pylist()
        if studies != [name]:
            raise _StreamFallbackError  # another study (or several): the usual path
        if not pc.all(pc.is_in(t.choice, value_set=allowed)).as_py():
            raise _StreamFallbackError
        if any(fp not in (None, stored_fp) for fp in pc.unique(t.study_fingerprint).to_pylist()):
            raise _StreamFallbackError
        if stored is not None and pc.any(pc.is_in(t.uuid, value_set=stored)).as_py():
            raise _StreamFallbackError  # a vote id stored already
        at = pc.index_in(t.item_key, value_set=item_keys)  # (no Python per key)
        if at.null_count:
            raise _StreamFallbackError  # an item the study does not have
        item = item_ids[at.to_numpy(zero_copy_only=False)]
        enc = pc.dictionary_encode(t.annotator)  # distinct names, in order of first appearance
        added: list[str] = []
        for who in enc.dictionary.to_pylist():
            if who not in given_ids:
                known = exact.get(who) or legacy.get(who)
                if known is None:
                    last += 1
                    known = last
                    added.append(who)
                given_ids[who] = known
                codes[who] = len(codes)
        names = enc.dictionary.to_pylist()
        at = enc.indices.to_numpy(zero_copy_only=False)
        ann = np.array([given_ids[w] for w in names], dtype=np.int64)[at]
        code = np.array([codes[w] for w in names], dtype=np.int64)[at]
        retract = pc.equal(t.choice, Choice.RETRACT.value).to_numpy(zero_copy_only=False)
        has_sup = pc.is_valid(t.supersedes).to_numpy(zero_copy_only=False)
        if np.any(retract & ~has_sup):
            raise _StreamFallbackError  # a retraction that names no vote
        child = np.flatnonzero(has_sup)
        state.hashes.append(key)
        state.uuids.append(t.uuid)
        state.annotator_codes.append(code)
        state.annotator_ids.append(ann)
        state.item_ids.append(item)
        state.retract.append(retract)
        state.children.append(child + state.rows)
        state.supersedes.append(t.supersedes.take(pa.array(child)))
        state.no_fingerprint += t.study_fingerprint.null_count
        state.rows += n
        plan = _TablePlan(st.id, np.arange(n), item, [], code)
        probability = t.selection_probability
        if packed and (probability is None or probability.null_count == n):
            batch: Any = _pack_votes(t, plan, ann, 0, n, now)
        else:  # a probability goes in as a Python float (see _apply_vote_table)
            batch = _vote_tuples(t, plan, ann, 0, n, now)
        return batch, added, [given_ids[w] for w in added]

    def made() -> Iterator[tuple[Any, list[str], list[int]]]:
        # a row the fast path refuses (_NotFastError): read_votes checks first, and where
        # it is, the bad row is looked for from that chunk on (_raise_bad_row)
        try:
            for t, key in read:
                yield checked_chunk(t, key)
        except _NotFastError as err:
            at = _RefusedAt(chunks, len(state.uuids), state.uuids, state.hashes)
            raise _StreamFallbackError(len(chunks), at) from err
        try:
            _check_across_rows(state)
        except _NotFastError as err:  # a vote id twice
            at = _RefusedAt(chunks, None, state.uuids, state.hashes)
            raise _StreamFallbackError(len(chunks), at) from err
        except _SlowPathError as err:
            raise _StreamFallbackError from err

    ready = _Ahead(made(), start=False)  # packed in a second worker thread

    def batches() -> Iterator[Any]:
        stored = stored_last
        for batch, added, ids in ready:
            # the chunk's new annotators, created as annotator_ids creates them (the ids
            # the worker gave them, or the file goes the usual way)
            if added and repo.add_annotators(s, added, stored) != ids:
                raise _StreamFallbackError  # never expected: rowids are max + 1
            stored = max(stored, *ids) if ids else stored
            yield batch
        if state.rows != len(chunks):
            raise _StreamFallbackError
        _check_vote_parents(
            s, st.id, np.concatenate(state.annotator_ids), np.concatenate(state.item_ids)
        )

    refused: tuple[type[BaseException], ...] = (AnnotateError, *repo.integrity_errors())
    try:
        report.votes_added += repo.bulk_insert_vote_batches(s, batches(), expected=len(chunks))
    except refused as err:  # the usual import names the row (or the conflict)
        raise _StreamFallbackError from err
    finally:
        ready.close()  # before the reader (the caller closes it): it may wait on the reader
    if state.no_fingerprint:
        report.notes.append(
            f"{one_line(chunks.path)}: {state.no_fingerprint} vote(s) for study {st.name!r} "
            "carry no study_fingerprint: their items were matched by key only"
        )


def _check_across_rows(state: _ChunkState) -> None:
    """The checks of :func:`_plan_vote_table` that compare rows, on the whole file:
    :class:`_NotFastError` when a vote id repeats (as the fast read of the whole file
    refuses it), :class:`_SlowPathError` when a ``supersedes`` does not name the current
    vote of the same annotator and item on an earlier row."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    uuid = pa.concat_arrays(state.uuids)
    hashes = sorted_uuid_hashes(np.concatenate(state.hashes))
    if hashes is None and pc.count_distinct(uuid).as_py() != len(uuid):
        raise _NotFastError  # a vote id twice
    ann = np.concatenate(state.annotator_codes)
    item = np.concatenate(state.item_ids)
    retract = np.concatenate(state.retract)
    child = np.concatenate(state.children)
    has_sup = np.zeros(len(uuid), dtype=bool)
    has_sup[child] = True
    if child.size:
        target = uuid_rows(uuid, hashes, pa.concat_arrays(state.supersedes))
        if (
            np.any(target < 0)
            or np.any(target >= child)
            or np.any(ann[target] != ann[child])
            or np.any(item[target] != item[child])
            or np.any(retract[target] & retract[child])
            or np.unique(target).size != child.size  # a vote replaced twice
        ):
            raise _SlowPathError
    roots = np.flatnonzero(~has_sup)
    root_key = ann[roots] * (int(item.max()) + 1) + item[roots]
    root_key.sort()
    if np.any(root_key[1:] == root_key[:-1]):
        raise _SlowPathError  # a second chain for one annotator and item


def _vote_tuples(
    table: VoteTable, plan: _TablePlan, ann: Any, start: int, stop: int, now: str
) -> list[tuple[Any, ...]]:
    """Rows ``start:stop`` of a study's share of the table as the row tuples
    :func:`repo.bulk_insert_vote_batches` takes (``VOTE_INSERT_COLUMNS`` order)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    take = pa.array(plan.rows[start:stop])
    probability: Any = (
        itertools.repeat(None, len(take))
        if table.selection_probability is None
        else table.selection_probability.take(take).to_pylist()
    )
    return list(
        zip(
            table.uuid.take(take).to_pylist(),
            itertools.repeat(plan.study_id, len(take)),
            ann[start:stop].tolist(),
            plan.item_ids[start:stop].tolist(),
            table.choice.take(take).to_pylist(),
            pc.fill_null(table.swapped.take(take), False).to_pylist(),
            table.response_ms.take(take).to_pylist(),
            pc.fill_null(table.fast.take(take), False).to_pylist(),
            pc.fill_null(table.created_at.take(take), now).to_pylist(),
            table.supersedes.take(take).to_pylist(),
            probability,
            strict=True,
        )
    )


# --- comments and flags in an export folder (issue 12) -------------------------------


def _note_jobs(folder: Path) -> list[_Job]:
    """The export's ``item_notes.<csv|jsonl|parquet>``, read (the first found), if any."""
    from annotate.services.notes import read_note_file

    for ext in ("csv", "jsonl", "parquet"):
        p = folder / f"item_notes.{ext}"
        if p.exists():
            return [_Job("notes", read_note_file(p), p)]
    return []


def _apply_notes(s: Session, job: _Job, report: ImportReport) -> None:
    """Add the notes not stored yet (idempotent by note uuid)."""
    from annotate.services.notes import import_notes

    added = import_notes(s, job.path, job.payload)
    if added:
        report.notes.append(f"{added} item note{'s' * (added != 1)} (comments and flags) added")


# --- re-tests and questionnaire answers in an export folder (issue 16) -----------------


def _quality_jobs(folder: Path) -> list[_Job]:
    """The export's ``retests.<fmt>`` and ``annotators.<fmt>``, read, if any (applied after
    the folder's votes: a re-test names the vote it repeats)."""
    from annotate.services.quality_io import RETEST_STEM, quality_files, read_quality_file

    return [
        _Job("retests" if stem == RETEST_STEM else "answers", read_quality_file(p), p)
        for stem, p in quality_files(folder)
    ]


def _apply_quality(s: Session, job: _Job, report: ImportReport) -> None:
    """Add the re-test votes or answers not stored yet (idempotent)."""
    from annotate.services.quality_io import import_answers, import_retests

    if job.kind == "retests":
        added = import_retests(s, job.path, job.payload)
        what = "re-test vote"
    else:
        added = import_answers(s, job.path, job.payload)
        what = "questionnaire answer"
    if added:
        report.notes.append(f"{added} {what}{'s' * (added != 1)} added")
