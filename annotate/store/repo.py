"""Queries. Functions take a Session first, never commit, and return frozen
dataclasses or tuples, never live ORM objects.

Every query runs on both back ends (a SQLite file, a PostgreSQL database): portable
SQL through SQLAlchemy's ``text()`` with named parameters, and on the hot paths that
use the DB-API cursor directly, ``?`` placeholders turned into psycopg's ``%s`` by
:func:`_raw` (so no ``%`` in those queries). What only SQLite has (``typeof``, SQL
functions defined in Python, ``PRAGMA``, ``sqlite_master``) is confined to branches on
:func:`is_postgres` with a portable path for PostgreSQL beside it.
"""

from __future__ import annotations

import gc
import json
import sqlite3
import sys
import uuid as uuidlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text, update
from sqlmodel import Session, col, select

from annotate.choices import LEFT_CHOICES, Choice, outcome_sql
from annotate.errors import AnnotateError
from annotate.names import InvalidNameError, normalize_annotator, one_line
from annotate.store import quick_votes
from annotate.store.models import (
    AccessToken,
    Annotator,
    AnnotatorAnswer,
    Battle,
    GoldAnswer,
    Item,
    ItemNote,
    ModelInfo,
    ModelResponse,
    Prompt,
    Question,
    QuestionPair,
    Study,
    SubjectChoice,
    Vote,
    utc_now,
)
from annotate.store.quick import LIST_STUDIES_SQL
from annotate.store.rows import ItemLoad as ItemLoad
from annotate.store.rows import StudyRow as StudyRow
from annotate.study_settings import SettingError, StudySettings
from annotate.views import QuestionView, StudyListing


@dataclass(frozen=True)
class VoteRow:
    id: int
    uuid: str
    study_id: int
    annotator_id: int
    item_id: int
    choice: str
    swapped: bool
    response_ms: int | None
    fast: bool
    created_at: datetime
    supersedes: str | None
    retest_of: str | None = None
    """Set on the rows of a swapped re-test chain (migration 008)."""


@dataclass(frozen=True)
class PairView:
    item_id: int
    key: str
    first: QuestionView
    second: QuestionView


@dataclass(frozen=True)
class BattleView:
    item_id: int
    key: str
    prompt: str | None
    category: str
    model_a: str
    model_b: str
    response_a: str | None
    response_b: str | None


def is_postgres(session: Session) -> bool:
    """Whether the session's database is PostgreSQL (else SQLite)."""
    return session.get_bind().dialect.name == "postgresql"


def _raw(session: Session) -> tuple[Any, Any]:
    """The session's DB-API connection and a function that adapts ``?`` placeholders to it."""
    conn = session.connection().connection.dbapi_connection
    assert conn is not None
    if is_postgres(session):
        return conn, _percent_marks
    return conn, _same


def _same(sql: str) -> str:
    return sql


def _percent_marks(sql: str) -> str:
    assert "%" not in sql, "raw SQL for psycopg must not hold a literal %"
    return sql.replace("?", "%s")


def integrity_errors() -> tuple[type[BaseException], ...]:
    """The DB-API errors a constraint violation raises on a raw cursor (either back end)."""
    errors: tuple[type[BaseException], ...] = (sqlite3.IntegrityError,)
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        errors = (*errors, psycopg.IntegrityError)
    return errors


def _study_row(s: Study) -> StudyRow:
    assert s.id is not None
    return StudyRow(s.id, s.name, s.kind, s.title, s.description, stored_settings(s), s.fingerprint)


def stored_settings(s: Study) -> StudySettings:
    """A stored study's settings, validated; a key the JSON lacks takes the kind's default.

    Raises
    ------
    AnnotateError
        One line naming the study, the setting and what it should be, when the stored
        JSON is not an object or holds a bad value (a database edited by hand).
    """
    try:
        raw = json.loads(s.settings_json or "{}")
        if not isinstance(raw, dict):
            raise SettingError("settings_json", raw, "a JSON object")
        return StudySettings.from_dict(s.kind, raw, ignore_unknown=True)
    except (ValueError, SettingError) as err:  # json.JSONDecodeError is a ValueError
        raise AnnotateError(
            f"study {one_line(s.name)!r} has bad stored settings ({one_line(err)[:200]}); "
            "fix settings_json in the database or import the study into a new one",
            title="Bad study settings",
        ) from None


def get_study(session: Session, name: str) -> StudyRow | None:
    """The study called ``name``, or None (its settings parsed: see :func:`stored_settings`)."""
    s = session.exec(select(Study).where(Study.name == name)).first()
    return _study_row(s) if s else None


def study_names(session: Session) -> list[str]:
    return list(session.exec(select(Study.name).order_by(Study.name)))


def list_studies(session: Session) -> list[StudyListing]:
    """Every study with its item, current-vote and annotator counts."""
    rows = session.execute(text(LIST_STUDIES_SQL)).all()
    return [StudyListing(*r) for r in rows]


def annotator_id(session: Session, name: str, *, create: bool = True) -> int | None:
    """The id of annotator ``name``; created when missing if ``create``.

    The name goes through :func:`annotate.names.normalize_annotator` first, so
    ``"Alice "`` and ``"alice"`` are one person, stored as ``"alice"``. A name
    stored before that rule (``"Alice"``) is found by its normalised form.

    Raises
    ------
    AnnotateError
        The name breaks the rule (empty, control characters, too long); the
        message states the rule.
    """
    try:
        norm = normalize_annotator(name)
    except InvalidNameError as err:
        raise AnnotateError(str(err), title="Invalid annotator name") from None
    a = session.exec(select(Annotator).where(Annotator.name == norm)).first()
    if a is None:
        a = _legacy_annotator(session, norm)
    if a is None:
        if not create:
            return None
        a = Annotator(name=norm)
        session.add(a)
        session.flush()
    assert a.id is not None
    return a.id


def _legacy_annotator(session: Session, norm: str) -> Annotator | None:
    """An annotator stored under a not normalised name (``"Alice"``) whose form is ``norm``."""
    for a in session.exec(select(Annotator).where(Annotator.name != norm)):
        try:
            if normalize_annotator(a.name) == norm:
                return a
        except InvalidNameError:
            continue
    return None


def annotator_lookup(session: Session) -> tuple[dict[str, int], dict[str, int], int]:
    """How :func:`annotator_ids` finds stored annotators: stored name -> id, normalised form
    of a name stored before normalisation -> id (the first such), and the largest id (0
    for none). New annotators get the ids after it, in the order they are created."""
    rows = session.exec(select(Annotator.id, Annotator.name).order_by(col(Annotator.id))).all()
    exact: dict[str, int] = {}
    legacy: dict[str, int] = {}
    for aid, stored in rows:
        assert aid is not None
        exact.setdefault(stored, aid)
        try:
            norm = normalize_annotator(stored)
        except InvalidNameError:
            continue
        if norm != stored:
            legacy.setdefault(norm, aid)
    last = max((aid for aid, _ in rows if aid is not None), default=0)
    return exact, legacy, last


def annotator_ids(session: Session, names: Sequence[str]) -> list[int]:
    """The ids of annotators ``names`` (normalised already), creating the missing ones.

    The same as :func:`annotator_id` on each name in turn (a name stored before
    normalisation is found by its normalised form; new annotators are created in the
    order given), with one query for the stored names instead of one per name.
    """
    exact, legacy, last = annotator_lookup(session)
    new = list(dict.fromkeys(n for n in names if n not in exact and n not in legacy))
    if new:
        exact.update(zip(new, add_annotators(session, new, last), strict=True))
    out: list[int] = []
    for name in names:
        aid = exact.get(name) or legacy[name]
        assert aid is not None
        out.append(aid)
    return out


def add_annotators(session: Session, names: Sequence[str], last: int) -> list[int]:
    """Create the annotators ``names`` (normalised, distinct, none stored), in that order;
    their ids. ``last``: the largest annotator id stored (:func:`annotator_lookup`)."""
    # as the ORM stores Annotator.created_at: naive UTC with microseconds
    now = utc_now().replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.executemany(
            q("INSERT INTO annotator (name, created_at) VALUES (?, ?)"),
            [(n, now) for n in names],
        )
        cur.execute(q("SELECT name, id FROM annotator WHERE id > ? ORDER BY id"), (last,))
        made = dict(cur.fetchall())
    finally:
        cur.close()
    return [made[n] for n in names]


def annotator_names(session: Session, ids: Iterable[int]) -> dict[int, str]:
    idl = list(ids)
    if not idl:
        return {}
    rows = session.exec(select(Annotator.id, Annotator.name).where(col(Annotator.id).in_(idl)))
    return {int(i): n for i, n in rows if i is not None}


def all_annotator_names(session: Session, limit: int = 500) -> list[str]:
    """The names of the annotators in the store (names only), most recently added first."""
    rows = session.exec(select(Annotator.name).order_by(col(Annotator.id).desc()).limit(limit))
    return list(rows)


def insert_study(
    session: Session,
    *,
    name: str,
    kind: str,
    title: str,
    description: str,
    settings: StudySettings,
    fingerprint: str,
) -> int:
    s = Study(
        name=name,
        kind=kind,
        title=title,
        description=description,
        settings_json=json.dumps(settings.as_dict(), sort_keys=True),
        fingerprint=fingerprint,
    )
    session.add(s)
    session.flush()
    assert s.id is not None
    return s.id


def insert_questions(
    session: Session, study_id: int, questions: Sequence[tuple[str, str, str, Any]]
) -> dict[str, int]:
    """Insert ``(key, subject, text, choices)`` rows; return key -> id."""
    ids: dict[str, int] = {}
    for key, subject, body, choices in questions:
        q = Question(
            study_id=study_id,
            key=key,
            subject=subject,
            text=body,
            choices_json=json.dumps(list(choices)) if choices else None,
        )
        session.add(q)
        session.flush()
        assert q.id is not None
        ids[key] = q.id
    return ids


def question_ids(session: Session, study_id: int) -> dict[str, int]:
    rows = session.exec(select(Question.key, Question.id).where(Question.study_id == study_id))
    return {k: int(i) for k, i in rows if i is not None}


def insert_scores(
    session: Session, rows: Iterable[tuple[int, str, float]], *, replace: bool = False
) -> int:
    """Insert response-matrix entries ``(question_id, model, score)``; with ``replace``, an
    entry already stored takes the new score."""
    upsert = (
        " ON CONFLICT (question_id, model) DO UPDATE SET score = excluded.score" if replace else ""
    )
    data = [{"q": q, "m": m, "s": s} for q, m, s in rows]
    if data:
        session.execute(
            text(
                "INSERT INTO responsescore (question_id, model, score) VALUES (:q, :m, :s)" + upsert
            ),
            data,
        )
    return len(data)


def insert_models(session: Session, study_id: int, models: dict[str, dict[str, Any]]) -> None:
    for m, meta in models.items():
        session.add(ModelInfo(study_id=study_id, model=m, meta_json=json.dumps(meta)))


def insert_item(session: Session, study_id: int, key: str, position: int) -> int:
    it = Item(study_id=study_id, key=key, position=position)
    session.add(it)
    session.flush()
    assert it.id is not None
    return it.id


def insert_pair(session: Session, item_id: int, first_id: int, second_id: int) -> None:
    session.add(QuestionPair(item_id=item_id, first_id=first_id, second_id=second_id))


def insert_prompt(session: Session, study_id: int, key: str, body: str, category: str) -> int:
    p = Prompt(study_id=study_id, key=key, text=body, category=category)
    session.add(p)
    session.flush()
    assert p.id is not None
    return p.id


def insert_response(session: Session, prompt_id: int, model: str, body: str) -> None:
    session.add(ModelResponse(prompt_id=prompt_id, model=model, text=body))


def insert_battle(
    session: Session, item_id: int, prompt_id: int | None, model_a: str, model_b: str
) -> None:
    session.add(Battle(item_id=item_id, prompt_id=prompt_id, model_a=model_a, model_b=model_b))


def item_ids(session: Session, study_id: int) -> dict[str, int]:
    """Item key -> id of every item of the study (one query on the DB-API cursor: a
    million-vote study has tens of thousands of items). Pending ORM rows are flushed
    first, as the ORM's query would (autoflush)."""
    session.flush()
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.execute(q('SELECT "key", id FROM item WHERE study_id = ?'), (int(study_id),))
        return {str(k): int(i) for k, i in cur.fetchall()}
    finally:
        cur.close()


def battle_models(session: Session, study_id: int) -> dict[str, tuple[str | None, str, str]]:
    """Battle key -> (prompt key, model_a, model_b)."""
    rows = session.execute(
        text(
            """SELECT i.key, p.key, b.model_a, b.model_b FROM battle b
               JOIN item i ON i.id = b.item_id LEFT JOIN prompt p ON p.id = b.prompt_id
               WHERE i.study_id = :s"""
        ),
        {"s": study_id},
    ).all()
    return {k: (p, a, b) for k, p, a, b in rows}


# --- items for the screens -------------------------------------------------


def item_loads(
    session: Session,
    study_id: int,
    kind: str,
    *,
    counts: bool = True,
    votes: Mapping[int, int] | None = None,
) -> list[ItemLoad]:
    """Every item with its subject (difficulty) or category (arena) and its current-vote count.

    The counts come from one pass over the votes; with ``counts=False`` (a study
    without an overlap cap, where counts do not matter) every count is 0 and the
    votes are not read at all. ``votes`` (item id -> current votes, absent: 0) gives
    counts the caller already knows instead (the votes are not read either).
    """
    if kind == "difficulty":
        sql = """SELECT i.id, i.key, i.position, q.subject FROM item i
                 JOIN questionpair p ON p.item_id = i.id JOIN question q ON q.id = p.first_id
                 WHERE i.study_id = ? ORDER BY i.position"""
    else:
        sql = """SELECT i.id, i.key, i.position, coalesce(pr.category, '') FROM item i
                 JOIN battle b ON b.item_id = i.id LEFT JOIN prompt pr ON pr.id = b.prompt_id
                 WHERE i.study_id = ? ORDER BY i.position"""
    per_item: Mapping[int, int] = {} if votes is None else votes
    if counts and votes is None:
        per_item = {
            int(i): int(n)
            for i, n in session.execute(
                text(
                    "SELECT item_id, count(*) FROM current_vote "
                    "WHERE study_id = :s GROUP BY item_id"
                ),
                {"s": study_id},
            ).all()
        }
    rows = _raw_rows(session, sql, (int(study_id),))
    get = per_item.get
    return [ItemLoad(int(a), b, int(c), d, get(int(a), 0)) for a, b, c, d in rows]


def _raw_rows(session: Session, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The rows of one query (``?`` placeholders) on the session's DB-API cursor: many rows
    come back several times faster than through SQLAlchemy's result rows."""
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.execute(q(sql), params)
        return list(cur.fetchall())
    finally:
        cur.close()


def item_vote_count(session: Session, study_id: int, item_id: int) -> int:
    """Current votes on one item (for the overlap cap)."""
    row = session.execute(
        text("SELECT count(*) FROM current_vote WHERE study_id = :s AND item_id = :i"),
        {"s": study_id, "i": item_id},
    ).one()
    return int(row[0])


def own_current_votes(
    session: Session, study_id: int, annotator: int
) -> list[tuple[str, bool, bool]]:
    """``(choice, swapped, fast)`` of one annotator's current votes in a study."""
    rows = session.execute(
        text(
            """SELECT choice, swapped, fast FROM current_vote
               WHERE study_id = :s AND annotator_id = :a"""
        ),
        {"s": study_id, "a": annotator},
    ).all()
    return [(str(c), bool(sw), bool(f)) for c, sw, f in rows]


def _question_view(q: Question) -> QuestionView:
    choices = tuple(json.loads(q.choices_json)) if q.choices_json else None
    return QuestionView(q.key, q.subject, q.text, choices)


def pair_view(session: Session, item_id: int) -> PairView:
    it = session.get(Item, item_id)
    pair = session.get(QuestionPair, item_id)
    if it is None or pair is None:
        raise LookupError(f"no question pair with item id {item_id}")
    first = session.get(Question, pair.first_id)
    second = session.get(Question, pair.second_id)
    assert first is not None
    assert second is not None
    return PairView(item_id, it.key, _question_view(first), _question_view(second))


def battle_view(session: Session, item_id: int) -> BattleView:
    it = session.get(Item, item_id)
    b = session.get(Battle, item_id)
    if it is None or b is None:
        raise LookupError(f"no battle with item id {item_id}")
    prompt_text: str | None = None
    category = ""
    ra = rb = None
    if b.prompt_id is not None:
        p = session.get(Prompt, b.prompt_id)
        assert p is not None
        prompt_text, category = p.text, p.category
        rows = session.exec(
            select(ModelResponse.model, ModelResponse.text).where(
                ModelResponse.prompt_id == b.prompt_id,
                col(ModelResponse.model).in_([b.model_a, b.model_b]),
            )
        ).all()
        texts = dict(rows)
        ra, rb = texts.get(b.model_a), texts.get(b.model_b)
    return BattleView(item_id, it.key, prompt_text, category, b.model_a, b.model_b, ra, rb)


def subjects(session: Session, study_id: int) -> list[str]:
    rows = session.exec(
        select(Question.subject).where(Question.study_id == study_id).distinct()
    ).all()
    return sorted(rows)


def excluded_subjects(session: Session, study_id: int, annotator: int) -> set[str]:
    """Subjects the annotator opted out of (the latest choice per subject wins)."""
    rows = session.exec(
        select(SubjectChoice.subject, SubjectChoice.excluded)
        .where(SubjectChoice.study_id == study_id, SubjectChoice.annotator_id == annotator)
        .order_by(col(SubjectChoice.id))
    ).all()
    state: dict[str, bool] = {}
    for subject, excluded in rows:
        state[subject] = excluded
    return {s for s, e in state.items() if e}


def add_subject_choice(
    session: Session, study_id: int, annotator: int, subject: str, excluded: bool
) -> None:
    session.add(
        SubjectChoice(study_id=study_id, annotator_id=annotator, subject=subject, excluded=excluded)
    )


# --- votes -------------------------------------------------------------------


def _vote_row(v: Vote) -> VoteRow:
    assert v.id is not None
    created = v.created_at
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return VoteRow(
        v.id,
        v.uuid,
        v.study_id,
        v.annotator_id,
        v.item_id,
        v.choice,
        v.swapped,
        v.response_ms,
        v.fast,
        created,
        v.supersedes,
        v.retest_of,
    )


def chain_head(
    session: Session, annotator: int, item_id: int, *, retest: bool = False
) -> VoteRow | None:
    """The newest row of the annotator's vote chain on the item (maybe a retraction).

    ``retest`` reads the annotator's swapped re-test chain on the item instead.
    """
    which = "IS NOT NULL" if retest else "IS NULL"
    row = session.execute(
        text(
            f"""SELECT v.id FROM vote v WHERE v.annotator_id = :a AND v.item_id = :i
               AND v.retest_of {which}
               AND NOT EXISTS (SELECT 1 FROM vote w WHERE w.supersedes = v.uuid)
               ORDER BY v.id DESC LIMIT 1"""
        ),
        {"a": annotator, "i": item_id},
    ).first()
    if row is None:
        return None
    v = session.get(Vote, row[0])
    assert v is not None
    return _vote_row(v)


def insert_vote(
    session: Session,
    *,
    study_id: int,
    annotator: int,
    item_id: int,
    choice: str,
    swapped: bool,
    response_ms: int | None,
    fast: bool,
    supersedes: str | None,
    vote_uuid: str | None = None,
    created_at: datetime | None = None,
    selection_probability: float | None = None,
    retest_of: str | None = None,
) -> VoteRow:
    v = Vote(
        retest_of=retest_of,
        uuid=vote_uuid or str(uuidlib.uuid4()),
        study_id=study_id,
        annotator_id=annotator,
        item_id=item_id,
        choice=choice,
        swapped=swapped,
        response_ms=response_ms,
        fast=fast,
        supersedes=supersedes,
        created_at=created_at or utc_now(),
        selection_probability=selection_probability,
    )
    session.add(v)
    session.flush()
    return _vote_row(v)


def latest_current_vote(session: Session, study_id: int, annotator: int) -> VoteRow | None:
    """The annotator's most recent vote in the study that is still current."""
    row = session.execute(
        text(
            """SELECT id FROM current_vote WHERE study_id = :s AND annotator_id = :a
               ORDER BY id DESC LIMIT 1"""
        ),
        {"s": study_id, "a": annotator},
    ).first()
    if row is None:
        return None
    v = session.get(Vote, row[0])
    assert v is not None
    return _vote_row(v)


def voted_item_ids(session: Session, study_id: int, annotator: int) -> set[int]:
    rows = session.execute(
        text("SELECT item_id FROM current_vote WHERE study_id = :s AND annotator_id = :a"),
        {"s": study_id, "a": annotator},
    ).all()
    return {int(r[0]) for r in rows}


VOTE_COLUMNS = (
    "vote_id",
    "study",
    "kind",
    "annotator",
    "item_id",
    "choice",
    "left",
    "response_ms",
    "fast",
    "created_at",
    "supersedes",
)
"""Columns of an exported vote row, in order."""


def vote_records(
    session: Session, study_id: int | None, *, current_only: bool, with_probability: bool = False
) -> list[tuple[Any, ...]]:
    """Vote rows in export order (``VOTE_COLUMNS``, then ``selection_probability`` with
    ``with_probability``), oldest first."""
    source = "current_vote" if current_only else "vote"
    where = "WHERE v.retest_of IS NULL" + ("" if study_id is None else " AND v.study_id = :s")
    rows = session.execute(
        text(
            f"""SELECT v.uuid, s.name, s.kind, a.name, i.key, v.choice, v.swapped,
                       v.response_ms, v.fast, v.created_at, v.supersedes,
                       v.selection_probability
                FROM {source} v JOIN study s ON s.id = v.study_id
                JOIN annotator a ON a.id = v.annotator_id JOIN item i ON i.id = v.item_id
                {where} ORDER BY v.id"""
        ),
        {} if study_id is None else {"s": study_id},
    ).all()
    out = []
    for uuid, study, kind, ann, item, choice, swapped, ms, fast, created, sup, prob in rows:
        left = LEFT_CHOICES["difficulty" if kind == "difficulty" else "arena"][bool(swapped)]
        row = (uuid, study, kind, ann, item, choice, str(left), ms, bool(fast), created, sup)
        out.append((*row, prob) if with_probability else row)
    return out


_CANONICAL_STAMP = (
    "(length(v.created_at) = 19 OR (length(v.created_at) = 26 AND substr(v.created_at, 20, 1) = '.'"
    " AND substr(v.created_at, 21) GLOB '[0-9][0-9][0-9][0-9][0-9][0-9]'))"
    " AND v.created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] "
    "[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*'"
    " AND substr(v.created_at, 1, 4) != '0000'"
)
"""A stored ``YYYY-MM-DD HH:MM:SS[.ffffff]`` (the form the store writes) that SQL turns
into export form by moving characters; other forms go through Python. The digits are not
checked for a real date (``date()`` on every row would double the query's cost): the
store never writes an impossible one."""


def vote_export_rows(
    session: Session,
    study_id: int,
    *,
    current_only: bool,
    fingerprint: str | None,
    stamp: Any,
    whole_ms: bool = True,
    batch: int = 20_000,
) -> Iterator[Sequence[Any]]:
    """A study's votes as rows of a table file, oldest first, in batches (streamed).

    The columns are ``VOTE_COLUMNS``, ``study_fingerprint``, ``selection_probability``
    (a float or None), formatted as
    :func:`vote_records` plus the export's conversions give them: ``left`` named,
    ``fast`` as ``True``/``False``, ``response_ms`` as stored (with ``whole_ms``, a
    number stored as a float is given as a whole number, as the CSV export writes it),
    ``created_at`` ISO 8601 in UTC with ``Z`` (a zero fraction left out). Stored
    timestamps in another form go through ``stamp`` (a function of the stored value,
    registered as an SQL function for the query; on PostgreSQL, where ``created_at`` is a
    timestamp, every stamp goes through it).
    """
    if is_postgres(session):
        yield from _vote_export_rows_pg(
            session,
            study_id,
            current_only=current_only,
            fingerprint=fingerprint,
            stamp=stamp,
            batch=batch,
        )
        return
    conn = session.connection().connection.dbapi_connection
    assert conn is not None
    conn.create_function("annotate_export_stamp", 1, stamp, deterministic=True)
    source = "current_vote" if current_only else "vote"
    cur = conn.cursor()
    try:
        cur.execute(
            f"""SELECT v.uuid, s.name, s.kind, a.name, i.key, v.choice,
                       CASE WHEN s.kind = 'difficulty'
                            THEN CASE WHEN v.swapped THEN 'second' ELSE 'first' END
                            ELSE CASE WHEN v.swapped THEN 'model_b' ELSE 'model_a' END END,
                       CASE WHEN ? AND typeof(v.response_ms) = 'real'
                            THEN CAST(v.response_ms AS INTEGER) ELSE v.response_ms END,
                       CASE WHEN v.fast THEN 'True' ELSE 'False' END,
                       CASE WHEN {_CANONICAL_STAMP}
                            THEN substr(v.created_at, 1, 10) || 'T' || substr(v.created_at, 12, 8)
                                 || CASE WHEN length(v.created_at) = 26
                                         AND substr(v.created_at, 20) != '.000000'
                                         THEN substr(v.created_at, 20) ELSE '' END || 'Z'
                            ELSE annotate_export_stamp(v.created_at) END,
                       v.supersedes, ?, v.selection_probability
                FROM {source} v JOIN study s ON s.id = v.study_id
                JOIN annotator a ON a.id = v.annotator_id JOIN item i ON i.id = v.item_id
                WHERE v.study_id = ? AND v.retest_of IS NULL ORDER BY v.id""",
            (whole_ms, fingerprint, study_id),
        )
        while rows := cur.fetchmany(batch):
            yield rows
    finally:
        cur.close()


def _vote_export_rows_pg(
    session: Session,
    study_id: int,
    *,
    current_only: bool,
    fingerprint: str | None,
    stamp: Any,
    batch: int,
) -> Iterator[Sequence[Any]]:
    """:func:`vote_export_rows` in portable SQL, the timestamps formatted in Python.

    ``response_ms`` is an integer column there (PostgreSQL stores no fraction in it), so
    ``whole_ms`` has nothing to do.
    """
    source = "current_vote" if current_only else "vote"
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.execute(
            q(
                f"""SELECT v.uuid, s.name, s.kind, a.name, i.key, v.choice,
                       CASE WHEN s.kind = 'difficulty'
                            THEN CASE WHEN v.swapped THEN 'second' ELSE 'first' END
                            ELSE CASE WHEN v.swapped THEN 'model_b' ELSE 'model_a' END END,
                       v.response_ms,
                       CASE WHEN v.fast THEN 'True' ELSE 'False' END,
                       v.created_at, v.supersedes, v.selection_probability
                FROM {source} v JOIN study s ON s.id = v.study_id
                JOIN annotator a ON a.id = v.annotator_id JOIN item i ON i.id = v.item_id
                WHERE v.study_id = ? AND v.retest_of IS NULL ORDER BY v.id"""
            ),
            (study_id,),
        )
        while rows := cur.fetchmany(batch):
            yield [(*r[:9], stamp(r[9]), r[10], fingerprint, r[11]) for r in rows]
    finally:
        cur.close()


def _csv_cell(expr: str) -> str:
    """SQL for a text value as :mod:`csv`'s writer (``QUOTE_MINIMAL``, line end ``\\n``)
    writes it: in double quotes, quotes doubled, when it holds a comma, a quote or a
    line feed (a lone carriage return is written as is)."""
    return (
        f"CASE WHEN instr({expr}, ',') OR instr({expr}, '\"') OR instr({expr}, char(10)) "
        f"THEN '\"' || replace({expr}, '\"', '\"\"') || '\"' ELSE {expr} END"
    )


def vote_export_plain(session: Session, study_id: int) -> bool:
    """Whether every vote of the study has the stored types :func:`vote_export_csv_lines`
    formats in SQL: text ids, names, keys and choices, a number or nothing as the
    response time (anything else, written by hand, goes through :mod:`csv`). Always
    False on PostgreSQL: that path is SQLite's (``typeof``, an SQL function in Python),
    and PostgreSQL's typed columns make :func:`vote_export_rows` exact there."""
    if is_postgres(session):
        return False
    (mine,) = session.execute(
        text("SELECT COUNT(*) FROM vote WHERE study_id = :s"), {"s": study_id}
    ).one()
    (total,) = session.execute(text("SELECT COUNT(*) FROM vote")).one()
    # a study holding most votes is read faster by a scan of the table than by its index
    study = "+v.study_id" if 2 * mine >= total else "v.study_id"
    checks = [
        # the votes' own columns: one pass over the study's votes, no joins
        f"""SELECT 1 FROM vote v WHERE {study} = :s AND (
               typeof(v.uuid) != 'text' OR typeof(v.choice) != 'text'
               OR typeof(v.response_ms) NOT IN ('integer', 'real', 'null')
               OR typeof(v.supersedes) NOT IN ('text', 'null')
               OR typeof(v.created_at) != 'text'
               OR typeof(v.selection_probability) NOT IN ('real', 'null'))
           LIMIT 1""",
        # the names and keys they join to (small tables)
        """SELECT 1 FROM study WHERE id = :s
               AND (typeof(name) != 'text' OR typeof(kind) != 'text')""",
        """SELECT 1 FROM item WHERE study_id = :s AND typeof(key) != 'text' LIMIT 1""",
        """SELECT 1 FROM annotator a WHERE typeof(a.name) != 'text'
               AND EXISTS (SELECT 1 FROM vote v WHERE v.annotator_id = a.id
                           AND v.study_id = :s)
           LIMIT 1""",
    ]
    row = None
    for sql in checks:
        row = session.execute(text(sql), {"s": study_id}).first()
        if row is not None:
            break
    return row is None


def vote_export_csv_lines(
    session: Session,
    study_id: int,
    *,
    tail: str,
    stamp: Any,
    batch: int = 20_000,
) -> Iterator[tuple[Sequence[str], Sequence[int]]]:
    """A study's whole vote log as CSV lines, oldest first, in batches (streamed), each
    with whether the vote is current (in ``current_vote``).

    One pass gives both vote files: the lines are those :func:`vote_export_rows` gives
    (``whole_ms``) as :mod:`csv`'s writer writes them: SQL writes each up to ``tail`` (the
    ``study_fingerprint`` cell with a comma before and after it), then Python adds the
    ``selection_probability`` cell (``repr`` of the float, as the writer does: SQL's
    text form of a real keeps only 15 digits) and the line end. Only for a study that
    passes :func:`vote_export_plain`. ``stamp`` as for :func:`vote_export_rows`.
    """
    if is_postgres(session):
        raise ValueError("vote_export_csv_lines is SQLite's path (vote_export_plain is False)")
    conn = session.connection().connection.dbapi_connection
    assert conn is not None
    conn.create_function("annotate_export_stamp", 1, stamp, deterministic=True)
    swapped = (
        "CASE WHEN s.kind = 'difficulty' THEN CASE WHEN v.swapped THEN 'second' ELSE 'first' END"
        " ELSE CASE WHEN v.swapped THEN 'model_b' ELSE 'model_a' END END"
    )
    created = (
        f"CASE WHEN {_CANONICAL_STAMP}"
        " THEN substr(v.created_at, 1, 10) || 'T' || substr(v.created_at, 12, 8)"
        " || CASE WHEN length(v.created_at) = 26 AND substr(v.created_at, 20) != '.000000'"
        " THEN substr(v.created_at, 20) ELSE '' END || 'Z'"
        f" ELSE {_csv_cell('annotate_export_stamp(v.created_at)')} END"
    )
    cells = [
        _csv_cell("v.uuid"),
        _csv_cell("s.name"),
        _csv_cell("s.kind"),
        _csv_cell("a.name"),
        _csv_cell("i.key"),
        _csv_cell("v.choice"),
        swapped,
        "coalesce(CASE WHEN typeof(v.response_ms) = 'real'"
        " THEN CAST(v.response_ms AS INTEGER) ELSE v.response_ms END, '')",
        "CASE WHEN v.fast THEN 'True' ELSE 'False' END",
        created,
        f"coalesce({_csv_cell('v.supersedes')}, '')",
    ]
    line = " || ',' || ".join(f"({c})" for c in cells)
    cur = conn.cursor()
    try:
        # "current" is the condition of the current_vote view
        cur.execute(
            f"""SELECT {line} || ?,
                       v.choice != 'retract'
                       AND NOT EXISTS (SELECT 1 FROM vote AS w WHERE w.supersedes = v.uuid),
                       v.selection_probability
                FROM vote v JOIN study s ON s.id = v.study_id
                JOIN annotator a ON a.id = v.annotator_id JOIN item i ON i.id = v.item_id
                WHERE v.study_id = ? AND v.retest_of IS NULL ORDER BY v.id""",
            (tail, study_id),
        )
        while rows := cur.fetchmany(batch):
            lines = [f"{line}\n" if p is None else f"{line}{p!r}\n" for line, _, p in rows]
            yield lines, [c for _, c, _ in rows]
    finally:
        cur.close()


def vote_export_csv_parts(
    session: Session,
    study_id: int,
    *,
    study_kind: str,
    left: tuple[str, str],
    tail: str,
    batch: int = 20_000,
) -> Iterator[tuple[list[str], list[float | None]]]:
    """A study's vote log (no re-test rows), oldest first, in batches (streamed), each row
    one text that SQL only concatenates (SQLite only, for a study that passes
    :func:`vote_export_plain`):
    ``uuid,<study_kind>,annotator,item,choice,left,response_ms,fast,<created_at>Z,supersedes``
    then ``tail``; and beside it the stored ``selection_probability`` (a float or None,
    for the caller to write: SQL's text form of a real keeps only 15 digits). The stored
    texts are as they are (not quoted, the timestamp as stored with a ``Z`` after it),
    ``left`` one of ``left`` (the names of the unswapped and the swapped side),
    ``response_ms`` whole or empty, ``fast`` ``True`` or ``False``.

    The caller checks in vectorised passes that no value needs CSV quoting and that the
    timestamps are in the store's form, and moves them into export form: evaluating that
    per row in SQL (:func:`vote_export_csv_lines`) costs several times the query itself.
    Whether a vote is current comes from :func:`superseded_vote_uuids`.
    """
    if is_postgres(session):
        raise ValueError("vote_export_csv_parts is SQLite's path (vote_export_plain is False)")
    (mine,) = session.execute(
        text("SELECT COUNT(*) FROM vote WHERE study_id = :s"), {"s": study_id}
    ).one()
    (total,) = session.execute(text("SELECT COUNT(*) FROM vote")).one()
    # a study holding most votes is read faster by a scan of the table than by its index
    study = "+v.study_id" if 2 * mine >= total else "v.study_id"
    conn = session.connection().connection.dbapi_connection
    assert conn is not None
    cur = conn.cursor()
    try:
        # each || copies the text built so far: the constants go in with their commas
        # (13 concatenations a row instead of 20: a fifth of the export's CPU time less)
        cur.execute(
            f"""SELECT v.uuid || ? || a.name || ',' || i.key || ',' || v.choice
                       || CASE WHEN v.swapped THEN ? ELSE ? END
                       || coalesce(CASE WHEN typeof(v.response_ms) = 'real'
                                        THEN CAST(v.response_ms AS INTEGER)
                                        ELSE v.response_ms END, '')
                       || CASE WHEN v.fast THEN ',True,' ELSE ',False,' END
                       || v.created_at || 'Z,' || coalesce(v.supersedes, '') || ?,
                       v.selection_probability
                FROM vote v JOIN annotator a ON a.id = v.annotator_id
                JOIN item i ON i.id = v.item_id
                WHERE {study} = ? AND v.retest_of IS NULL ORDER BY v.id""",
            (f",{study_kind},", f",{left[1]},", f",{left[0]},", tail, study_id),
        )
        while True:
            # a million row tuples would wake the cyclic garbage collector again and again
            # (each pass over every object alive): they hold only strings, so it waits
            paused = gc.isenabled()
            gc.disable()
            try:
                rows = cur.fetchmany(batch)
                lines = [r[0] for r in rows]
                probabilities = [r[1] for r in rows]
                del rows
            finally:
                if paused:
                    gc.enable()
            if not lines:
                break
            yield lines, probabilities
    finally:
        cur.close()


def superseded_vote_uuids(session: Session) -> list[str]:
    """Every ``supersedes`` stored as text (any study): a vote whose uuid is among them is
    not current (the ``NOT EXISTS`` of the ``current_vote`` view)."""
    rows = session.execute(text("SELECT supersedes FROM vote WHERE supersedes IS NOT NULL")).all()
    return [r[0] for r in rows if isinstance(r[0], str)]


def score_rows(
    session: Session, study_id: int, *, file_order: bool = False
) -> list[tuple[str, str, float]]:
    """Response matrix entries ``(question key, model, score)`` of a study.

    Questions in file order; per question the models by name, or with ``file_order``
    in the order they were stored (what ``annotate rank --study`` reads).
    """
    order = "r.id" if file_order else "r.model"
    rows = session.execute(
        text(
            f"""SELECT q.key, r.model, r.score FROM responsescore r
               JOIN question q ON q.id = r.question_id WHERE q.study_id = :s
               ORDER BY q.id, {order}"""
        ),
        {"s": study_id},
    ).all()
    return [(str(k), str(m), float(s)) for k, m, s in rows]


@dataclass(frozen=True)
class StudyContents:
    """Everything a study holds except votes, as plain tuples in file order."""

    questions: list[tuple[str, str, str, str | None]]
    """(key, subject, text, choices JSON)."""
    pairs: list[tuple[str, str, str]]
    """(pair key, first question key, second question key)."""
    scores: list[tuple[str, str, float]]
    models: list[tuple[str, str]]
    """(model, metadata JSON)."""
    prompts: list[tuple[str, str, str]]
    """(key, text, category)."""
    responses: list[tuple[str, str, str]]
    """(prompt key, model, text)."""
    battles: list[tuple[str, str | None, str, str]]
    """(battle key, prompt key or None, model_a, model_b)."""
    gold: dict[str, str] = field(default_factory=dict)
    """Item key -> the stored gold answer, for the gold items (migration 008)."""


def study_contents(session: Session, study_id: int) -> StudyContents:
    p = {"s": study_id}

    def q(sql: str) -> list[Any]:
        return list(session.execute(text(sql), p).all())

    return StudyContents(
        questions=[
            tuple(r)
            for r in q(
                "SELECT key, subject, text, choices_json FROM question "
                "WHERE study_id = :s ORDER BY id"
            )
        ],
        pairs=[
            tuple(r)
            for r in q(
                """SELECT i.key, q1.key, q2.key FROM item i JOIN questionpair p ON p.item_id = i.id
               JOIN question q1 ON q1.id = p.first_id JOIN question q2 ON q2.id = p.second_id
               WHERE i.study_id = :s ORDER BY i.position, i.id"""
            )
        ],
        scores=score_rows(session, study_id),
        models=[
            tuple(r)
            for r in q("SELECT model, meta_json FROM modelinfo WHERE study_id = :s ORDER BY id")
        ],
        prompts=[
            tuple(r)
            for r in q("SELECT key, text, category FROM prompt WHERE study_id = :s ORDER BY id")
        ],
        responses=[
            tuple(r)
            for r in q(
                """SELECT p.key, r.model, r.text FROM modelresponse r JOIN prompt p
               ON p.id = r.prompt_id WHERE p.study_id = :s ORDER BY p.id, r.id"""
            )
        ],
        battles=[
            tuple(r)
            for r in q(
                """SELECT i.key, p.key, b.model_a, b.model_b FROM item i
               JOIN battle b ON b.item_id = i.id LEFT JOIN prompt p ON p.id = b.prompt_id
               WHERE i.study_id = :s ORDER BY i.position, i.id"""
            )
        ],
        gold=gold_answers(session, study_id),
    )


def insert_gold(session: Session, item_id: int, answer: str) -> None:
    """Record the known answer of a gold item (never shown; used for gold accuracy)."""
    session.add(GoldAnswer(item_id=item_id, answer=answer))


def gold_answers(session: Session, study_id: int) -> dict[str, str]:
    """Item key -> stored gold answer, for the study's gold items."""
    rows = session.execute(
        text(
            "SELECT i.key, g.answer FROM goldanswer g JOIN item i ON i.id = g.item_id "
            "WHERE i.study_id = :s ORDER BY i.position, i.id"
        ),
        {"s": study_id},
    ).all()
    return {str(k): str(a) for k, a in rows}


def set_fingerprint(session: Session, study_id: int, fingerprint: str) -> None:
    """Record the study's content hash (study metadata, not a vote)."""
    st = session.get(Study, study_id)
    assert st is not None
    st.fingerprint = fingerprint
    session.add(st)
    session.flush()


VOTE_INSERT_COLUMNS = (
    "uuid",
    "study_id",
    "annotator_id",
    "item_id",
    "choice",
    "swapped",
    "response_ms",
    "fast",
    "created_at",
    "supersedes",
)


VOTE_INSERT_COLUMNS_WITH_PROBABILITY = (*VOTE_INSERT_COLUMNS, "selection_probability")
"""Rows of the bulk inserts may also carry ``selection_probability`` last (11 values)."""


def _insert_sql(rows: Sequence[Sequence[Any]]) -> str:
    """``INSERT INTO vote`` for rows of :data:`VOTE_INSERT_COLUMNS` or, 11 values long,
    :data:`VOTE_INSERT_COLUMNS_WITH_PROBABILITY`."""
    cols: tuple[str, ...] = VOTE_INSERT_COLUMNS
    if rows and len(rows[0]) == len(VOTE_INSERT_COLUMNS_WITH_PROBABILITY):
        cols = VOTE_INSERT_COLUMNS_WITH_PROBABILITY
    return f"INSERT INTO vote ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"


_BOOL_COLUMNS = tuple(VOTE_INSERT_COLUMNS.index(c) for c in ("swapped", "fast"))


def _bools(session: Session, rows: Iterable[Sequence[Any]]) -> Sequence[Sequence[Any]]:
    """Vote rows with ``swapped`` and ``fast`` as Python booleans on PostgreSQL (whose
    boolean columns refuse the integers 0 and 1 that SQLite stores)."""
    if not is_postgres(session):
        return rows if isinstance(rows, Sequence) else list(rows)
    out = []
    for r in rows:
        row = list(r)
        for k in _BOOL_COLUMNS:
            if row[k] is not None:
                row[k] = bool(row[k])
        out.append(tuple(row))
    return out


def bulk_insert_votes(session: Session, rows: Sequence[tuple[Any, ...]]) -> int:
    """Insert many vote rows (tuples in ``VOTE_INSERT_COLUMNS`` order, or with
    ``selection_probability`` after them) in the open transaction.

    ``created_at`` is an ISO ``YYYY-MM-DD HH:MM:SS[.ffffff]`` UTC string. Uses the
    DB-API ``executemany`` directly: the constraints still apply, and an
    IntegrityError rolls back the caller's whole transaction.
    """
    if not rows:
        return 0
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.executemany(q(_insert_sql(rows)), _bools(session, rows))
    finally:
        cur.close()
    return len(rows)


PACKED_VOTE_LAYOUT: tuple[tuple[str, int], ...] = (
    ("uuid", 36),
    ("annotator_id", 19),
    ("item_id", 19),
    ("choice", 1),
    ("swapped", 1),
    ("response_ms", 19),
    ("fast", 1),
    ("created_at", 26),
    ("supersedes", 36),
)
"""Fields of one record of :class:`PackedVotes`, in order, with their widths in bytes.

Every field is ASCII: ``uuid`` and ``supersedes`` a UUID (``supersedes`` all spaces for
none); ``annotator_id``, ``item_id`` and ``response_ms`` decimal digits with leading zeros
(``response_ms`` :data:`PACKED_NO_RESPONSE_MS` for none); ``choice`` the digit of its
position in :data:`PACKED_CHOICES`; ``created_at`` (``YYYY-MM-DD HH:MM:SS[.ffffff]``)
padded on the right with spaces; ``swapped`` and ``fast`` ``0`` or ``1``.
"""
PACKED_VOTE_WIDTH = sum(w for _, w in PACKED_VOTE_LAYOUT)

PACKED_CHOICES: tuple[str, ...] = tuple(c.value for c in Choice)
"""The choices a packed record's ``choice`` digit stands for, in digit order: the SQL
picks the text with a ``CASE`` (a constant string per row instead of cutting, casting
and right-trimming a padded field: ~0.15 s less per million rows)."""

PACKED_NO_RESPONSE_MS = b"-" + b"0" * 17 + b"1"
"""``response_ms`` of a packed record without one: it reads as -1, which ``NULLIF`` makes
NULL (a stored time is never negative: the reader takes only digits), one integer
comparison instead of comparing the field's text with spaces (~0.1 s per million)."""


@dataclass(frozen=True)
class PackedVotes:
    """Vote rows of one study as fixed-width records (:data:`PACKED_VOTE_LAYOUT`), for
    :func:`bulk_insert_vote_batches` on SQLite: one statement inserts them all, SQLite
    cutting the fields out of the bytes (no Python object per row or per value).

    The caller has checked every value (UUIDs, choices, timestamps, whole numbers in
    range, existing ids): the fields are taken as they are.
    """

    study_id: int
    data: bytes | memoryview
    """The records, one after the other (``bytes``, or a 1-D ``memoryview`` of bytes)."""
    rows: int

    def __post_init__(self) -> None:
        if len(self.data) != self.rows * PACKED_VOTE_WIDTH:
            raise ValueError(
                f"{len(self.data)} bytes are not {self.rows} records of {PACKED_VOTE_WIDTH}"
            )


PACKED_OFFSETS = "temp.annotate_packed_offsets"
"""The byte offsets of the records of :class:`PackedVotes` (one row each, ``o`` the primary
key), a temporary table of the bulk insert's connection filled by
:func:`_packed_offsets_upto` and dropped when the insert ends."""


def _packed_insert_sql() -> str:
    """``INSERT ... SELECT`` of :class:`PackedVotes` (``?1`` the bytes, ``?2`` their length,
    ``?3`` the study id): the records' offsets come in order from :data:`PACKED_OFFSETS`
    (a scan of its primary key), so the rows get ids in the order of the records. (A
    recursive CTE stepping through the offsets costs ~0.3 s more per million rows: it
    writes each offset to its queue and reads it back.)"""
    start: dict[str, int] = {}
    at = 1
    for name, width in PACKED_VOTE_LAYOUT:
        start[name] = at
        at += width
    w = dict(PACKED_VOTE_LAYOUT)

    def field(name: str) -> str:
        return f"CAST(substr(?1, o + {start[name]}, {w[name]}) AS TEXT)"

    def number(name: str) -> str:
        # a blob cast to INTEGER is read as text first: the same as through TEXT
        return f"CAST(substr(?1, o + {start[name]}, {w[name]}) AS INTEGER)"

    blank = {n: "'" + " " * w[n] + "'" for n in ("supersedes",)}
    assert len(PACKED_CHOICES) <= 10 ** w["choice"]
    choice = " ".join(f"WHEN {k} THEN '{c}'" for k, c in enumerate(PACKED_CHOICES))
    values = {
        "uuid": field("uuid"),
        "study_id": "?3",
        "annotator_id": number("annotator_id"),
        "item_id": number("item_id"),
        "choice": f"CASE {number('choice')} {choice} END",
        "swapped": number("swapped"),
        "response_ms": f"NULLIF({number('response_ms')}, -1)",
        "fast": number("fast"),
        "created_at": f"rtrim({field('created_at')})",
        "supersedes": f"NULLIF({field('supersedes')}, {blank['supersedes']})",
    }
    assert set(values) == set(VOTE_INSERT_COLUMNS)
    return (
        f"INSERT INTO vote ({', '.join(VOTE_INSERT_COLUMNS)}) "
        f"SELECT {', '.join(values[c] for c in VOTE_INSERT_COLUMNS)} "
        f"FROM {PACKED_OFFSETS} WHERE o < ?2 ORDER BY o"
    )


def _packed_offsets_upto(cur: Any, filled: int, size: int) -> int:
    """Make :data:`PACKED_OFFSETS` hold every record offset below ``size`` bytes (it holds
    those below ``filled``); returns the new bound."""
    if size <= filled:
        return filled
    if not filled:
        cur.execute(f"CREATE TABLE {PACKED_OFFSETS} (o INTEGER PRIMARY KEY)")
    cur.execute(
        f"WITH RECURSIVE k(o) AS (SELECT ? UNION ALL SELECT o + {PACKED_VOTE_WIDTH} FROM k "
        f"WHERE o + {PACKED_VOTE_WIDTH} < ?) INSERT INTO {PACKED_OFFSETS} SELECT o FROM k",
        (filled, size),
    )
    return -(-size // PACKED_VOTE_WIDTH) * PACKED_VOTE_WIDTH


BULK_CACHE_KIB = 256 * 1024
"""SQLite page cache (KiB) while a bulk insert runs: the vote indexes of a million-vote
study stay in memory instead of being re-read from the WAL on every random uuid."""

BULK_REINDEX_MIN_ROWS = 50_000
"""Bulk inserts of at least this many rows (and at least the rows stored) rebuild the
vote table's secondary indexes afterwards instead of maintaining them row by row."""

BULK_KEPT_INDEXES = frozenset({"ix_vote_retest", "ux_vote_retest_root", "ux_vote_supersedes"})
"""Vote indexes a bulk insert that rebuilds the others keeps and maintains row by row:
partial indexes over the rows that replace or retest a vote (none or a few per cent of an
import), whose rebuild would scan every row of the table for them (~0.08 s each per
million rows) where keeping them costs the insert ~0.05 s in all (16 KiB pages)."""

THREADED_SORT_INDEXES = frozenset({"ux_vote_uuid"})
"""Vote indexes whose rebuild sorts with SQLite's worker threads (:func:`_threaded_sort`):
the one on the random 36-character vote ids, whose sort is most of its build. The
indexes on small integer keys build no faster that way (their sort is cheap next to the
table scan, which stays on the calling thread), so they keep the in-memory sort."""

SORTER_RUN_KIB = 4096
"""Size of each sorted run while an index of :data:`THREADED_SORT_INDEXES` is built: SQLite
sizes its sorter's runs by ``cache_size``, and hands a full run to a worker thread
(sorted there and written to a temporary file) only when the keys do not fit one run."""


@contextmanager
def _threaded_sort(cur: Any, cache_kib: int) -> Iterator[None]:
    """``CREATE INDEX`` statements run inside sort with SQLite's worker threads.

    ``PRAGMA threads`` lets SQLite's external sorter sort runs of keys in worker threads
    while the statement's own thread scans the table, and merge them in threads; it
    only does so when the keys overflow one run, whose size ``cache_size`` sets. So for
    the statement the page cache is made :data:`SORTER_RUN_KIB` with ``cache_spill``
    off: the pages this transaction changed stay in memory (a cache over its size grows
    rather than spilling dirty pages), clean pages may be dropped and read again. Back
    to ``cache_kib`` and single-threaded sorting after, on every exit. The runs go to
    SQLite's temporary files (``temp_store`` unchanged; SQLite uses no worker threads
    with in-memory temporary storage). The index built is the same; only its build is
    spread over two cores (1M random UUIDs: ~1.1 s on one thread, ~0.55 s on the
    calling thread and the same total CPU with two workers).
    """
    import os

    workers = 2 if (os.cpu_count() or 1) > 1 else 0
    if not workers:
        yield
        return
    cur.execute(f"PRAGMA threads = {workers}")
    cur.execute("PRAGMA cache_spill = OFF")
    cur.execute(f"PRAGMA cache_size = {-SORTER_RUN_KIB}")
    try:
        yield
    finally:
        cur.execute(f"PRAGMA cache_size = {-cache_kib}")
        cur.execute("PRAGMA cache_spill = ON")
        cur.execute("PRAGMA threads = 0")


def bulk_insert_vote_batches(
    session: Session,
    batches: Iterable[Sequence[tuple[Any, ...]] | PackedVotes],
    *,
    expected: int,
) -> int:
    """Insert vote rows (``VOTE_INSERT_COLUMNS`` order) batch by batch in the open transaction.

    A batch is a sequence of row tuples or, on SQLite only, :class:`PackedVotes` (one
    ``INSERT ... SELECT`` per batch: the same rows, values and types, about half the
    CPU of ``executemany``, which binds ten Python values per row).

    For a large import (``expected`` rows, at least as many as the table holds) the
    vote table's secondary indexes are dropped first and rebuilt after the last
    batch, in the same transaction: building an index from sorted rows is much
    faster than maintaining it row by row. That includes the unique index on
    ``uuid`` (a named index since migration 005); the partial ones of
    :data:`BULK_KEPT_INDEXES` (``supersedes``, retests) stay and check each row. Other
    connections never see the table without them (the transaction commits or rolls back
    whole, DDL included); the uniqueness constraints are checked when the indexes are
    rebuilt (for a kept index, as the rows go in), and an IntegrityError (``UNIQUE
    constraint failed: vote.<column>``) rolls back the caller's whole transaction. The
    page cache is enlarged for the duration.

    Concurrency: no other writer can add a row while the indexes are missing. The
    caller's transaction began with ``BEGIN IMMEDIATE`` (``make_engine``), so this
    connection holds SQLite's RESERVED write lock from before the duplicate checks of
    the import until COMMIT or ROLLBACK; in WAL mode a second writer's ``BEGIN
    IMMEDIATE`` or first write fails with SQLITE_BUSY (after the busy timeout) until
    then, whatever writer lock file it did or did not queue on. Readers see the last
    committed state, indexes included (tests/store/test_migration_005.py checks both).
    """
    if is_postgres(session):
        return _bulk_insert_vote_batches_pg(session, batches)
    conn = session.connection().connection.dbapi_connection
    assert conn is not None
    cur = conn.cursor()
    offsets = 0  # bytes of records PACKED_OFFSETS covers (0: not created)
    try:
        (cache,) = cur.execute("PRAGMA cache_size").fetchone()
        cur.execute(f"PRAGMA cache_size = {-BULK_CACHE_KIB}")
        indexes: list[tuple[str, str]] = []
        if expected >= BULK_REINDEX_MIN_ROWS:
            (stored,) = cur.execute("SELECT COUNT(*) FROM vote").fetchone()
            if expected >= stored:
                indexes = [
                    (name, sql)
                    for name, sql in cur.execute(
                        "SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                        "AND tbl_name = 'vote' AND sql IS NOT NULL ORDER BY name"
                    )
                    if name not in BULK_KEPT_INDEXES
                ]
        for name, _ in indexes:
            cur.execute(f'DROP INDEX "{name}"')
        n = 0
        packed_sql = _packed_insert_sql()
        for rows in batches:
            if isinstance(rows, PackedVotes):
                if rows.rows:
                    offsets = _packed_offsets_upto(cur, offsets, len(rows.data))
                    cur.execute(packed_sql, (rows.data, len(rows.data), rows.study_id))
                n += rows.rows
                continue
            cur.executemany(_insert_sql(rows), rows)
            n += len(rows)
        for name, create in indexes:
            with (
                _threaded_sort(cur, BULK_CACHE_KIB)
                if name in THREADED_SORT_INDEXES
                else nullcontext()
            ):
                cur.execute(create)
        return n
    finally:
        if offsets:
            cur.execute(f"DROP TABLE {PACKED_OFFSETS}")
        cur.execute(f"PRAGMA cache_size = {int(cache)}")
        cur.close()


def _bulk_insert_vote_batches_pg(
    session: Session, batches: Iterable[Sequence[tuple[Any, ...]] | PackedVotes]
) -> int:
    """:func:`bulk_insert_vote_batches` on PostgreSQL: the indexes stay.

    ``DROP INDEX`` takes an ACCESS EXCLUSIVE lock on ``vote`` until the transaction
    ends, so every reader (the monitor, the annotators' next item) would wait for the
    whole import; and PostgreSQL checks the unique indexes as rows arrive anyway. The
    rows go in with psycopg's ``executemany`` (pipelined); an IntegrityError
    (``duplicate key value violates unique constraint "ux_vote_uuid"``) aborts the
    caller's transaction, which rolls back whole.
    """
    conn, q = _raw(session)
    n = 0
    cur = conn.cursor()
    try:
        for rows in batches:
            if isinstance(rows, PackedVotes):
                raise TypeError("PackedVotes are SQLite's path; give PostgreSQL row tuples")
            cur.executemany(q(_insert_sql(rows)), _bools(session, rows))
            n += len(rows)
    finally:
        cur.close()
    return n


def foreign_keys_enforced(session: Session) -> bool:
    """Whether the session's connection checks foreign keys (always on PostgreSQL; on
    SQLite ``PRAGMA foreign_keys``, which an import of vote tables turns off for its
    transaction and replaces by :func:`missing_vote_parents`)."""
    if is_postgres(session):
        return True
    conn, _ = _raw(session)
    return bool(conn.execute("PRAGMA foreign_keys").fetchone()[0])


def missing_vote_parents(
    session: Session, study_id: int, annotator_ids: Any, item_ids: Any
) -> str | None:
    """What vote rows of study ``study_id`` with these annotator and item ids (sequences or
    ``numpy`` arrays, one per row) would lack: ``"study #1"``, ``"annotator #7"`` or
    ``"item #42 of study #1"`` (the first missing one), or None when the study, every
    annotator and every item (of that study) is stored.

    The foreign keys of the vote table, checked in three queries and two set comparisons
    instead of three lookups per row (an item of another study is refused too: a vote's
    item is one of its study's)."""
    import numpy as np

    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.execute(q("SELECT 1 FROM study WHERE id = ?"), (int(study_id),))
        if cur.fetchone() is None:
            return f"study #{int(study_id)}"
        checks = (
            ("annotator", annotator_ids, "SELECT id FROM annotator", ()),
            ("item", item_ids, "SELECT id FROM item WHERE study_id = ?", (int(study_id),)),
        )
        for what, ids, sql, params in checks:
            wanted = _distinct_ids(np.asarray(ids, dtype=np.int64))
            cur.execute(q(sql), params)
            stored = np.fromiter((i for (i,) in cur.fetchall()), dtype=np.int64)
            absent = wanted[~np.isin(wanted, stored)]
            if absent.size:
                of = f" of study #{int(study_id)}" if what == "item" else ""
                return f"{what} #{int(absent[0])}{of}"
        return None
    finally:
        cur.close()


def _distinct_ids(ids: Any) -> Any:
    """``numpy.unique`` of row ids (``numpy`` int64): for ids from 0 to a few times their
    count (a million votes naming ten thousand annotators), marked in a table of flags
    instead of sorted (~2 ms instead of ~50 ms per million)."""
    import numpy as np

    if ids.size and ids.min() >= 0 and ids.max() < 4 * ids.size:
        seen = np.zeros(int(ids.max()) + 1, dtype=bool)
        seen[ids] = True
        return np.flatnonzero(seen).astype(np.int64)
    return np.unique(ids)


def duplicate_vote_value(session: Session, column: str) -> str | None:
    """A value of ``vote.uuid`` or ``vote.supersedes`` stored twice, if any (in the open
    transaction; for the error of a bulk insert whose unique index could not be rebuilt)."""
    if column not in ("uuid", "supersedes"):
        raise ValueError(f"not a unique vote column: {column!r}")
    row = session.execute(
        text(
            f"SELECT {column} FROM vote WHERE {column} IS NOT NULL "
            f"GROUP BY {column} HAVING count(*) > 1 LIMIT 1"
        )
    ).first()
    return None if row is None else str(row[0])


def item_text_lengths(session: Session, study_id: int, kind: str) -> dict[int, int]:
    """Characters an annotator reads for each item (both questions, or prompt and responses)."""
    if kind == "difficulty":
        sql = """SELECT p.item_id, length(q1.text) + length(q2.text) FROM questionpair p
                 JOIN item i ON i.id = p.item_id JOIN question q1 ON q1.id = p.first_id
                 JOIN question q2 ON q2.id = p.second_id WHERE i.study_id = :s"""
    else:
        sql = """SELECT b.item_id, coalesce(length(pr.text), 0)
                        + coalesce(length(ra.text), 0) + coalesce(length(rb.text), 0)
                 FROM battle b JOIN item i ON i.id = b.item_id
                 LEFT JOIN prompt pr ON pr.id = b.prompt_id
                 LEFT JOIN modelresponse ra ON ra.prompt_id = b.prompt_id AND ra.model = b.model_a
                 LEFT JOIN modelresponse rb ON rb.prompt_id = b.prompt_id AND rb.model = b.model_b
                 WHERE i.study_id = :s"""
    return {int(i): int(n) for i, n in session.execute(text(sql), {"s": study_id}).all()}


# --- the live monitor ----------------------------------------------------------


def max_vote_id(session: Session, study_id: int) -> int:
    """The id of the study's newest vote row (0 without votes); a cheap change marker.

    Every vote, change of mind and undo appends a row, so the marker grows
    whenever the study's current votes change.
    """
    row = session.execute(
        text("SELECT coalesce(max(id), 0) FROM vote WHERE study_id = :s"), {"s": study_id}
    ).one()
    return int(row[0])


def vote_rows_after(session: Session, study_id: int, after_id: int) -> list[tuple[int, ...]]:
    """Vote rows of a study with ``id > after_id``, oldest first, as integer tuples.

    Each tuple is ``(id, item_id, annotator_id, choice code, swapped,
    response_ms or -1, fast, id of the superseded row or 0)`` with the choice
    codes of :data:`annotate.choices.OUTCOME` (-1 for a retraction). Appending these
    rows to the earlier ones and dropping every superseded row and every retraction
    gives the ``current_vote`` view.
    """
    return _vote_rows(session, "v.id > ?", (study_id, after_id))


def vote_outcomes_after(session: Session, study_id: int, after_id: int) -> list[tuple[int, ...]]:
    """:func:`vote_rows_after` with four of its columns: ``(id, item_id, choice code, id of
    the superseded row or 0)`` (what the adaptive schedule counts; a third faster to read)."""
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.execute(
            q(
                f"""SELECT v.id, v.item_id, {outcome_sql("v.choice")},
                      coalesce((SELECT w.id FROM vote w WHERE w.uuid = v.supersedes), 0)
               FROM vote v WHERE v.study_id = ? AND v.id > ? AND v.retest_of IS NULL
               ORDER BY v.id"""
            ),
            (study_id, after_id),
        )
        return list(cur.fetchall())
    finally:
        cur.close()


_VOTE_ROW_COLUMNS = ", ".join(quick_votes.COLUMN_SQL)
"""The columns of :func:`vote_rows_after` (and :func:`vote_rows_at`)."""


def vote_rows_array(session: Session, study_id: int, after_id: int) -> quick_votes.RowArray:
    """:func:`vote_rows_after` as an ``(n, 8)`` int64 array (``(0, 8)`` without rows).

    On SQLite the rows come in one statement, a text per column
    (:func:`annotate.store.quick_votes.read_vote_rows`: about half the CPU time of
    fetching them row by row at a million rows); row by row on PostgreSQL, and
    wherever a value is not an integer (the same error or conversion as before).
    """
    import itertools

    import numpy as np

    if not is_postgres(session):
        conn, _ = _raw(session)
        cur = conn.cursor()
        try:
            got = quick_votes.read_vote_rows(cur, study_id, after_id)
        finally:
            cur.close()
        if got is not None:
            return got
    rows = vote_rows_after(session, study_id, after_id)
    flat = itertools.chain.from_iterable(rows)
    return np.fromiter(flat, dtype=np.int64, count=8 * len(rows)).reshape(-1, 8)


def _vote_rows(session: Session, where: str, params: tuple[int, ...]) -> list[tuple[int, ...]]:
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.execute(
            q(
                f"""SELECT {_VOTE_ROW_COLUMNS}
               FROM vote v WHERE v.study_id = ? AND {where} AND v.retest_of IS NULL
               ORDER BY v.id"""
            ),
            params,
        )
        return list(cur.fetchall())
    finally:
        cur.close()


def vote_rows_at(session: Session, study_id: int, ids: Sequence[int]) -> list[tuple[int, ...]]:
    """The rows of :func:`vote_rows_after` with the given ids (those that exist), oldest
    first: the monitor's vote cache compares a sample of its rows with them."""
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    return _vote_rows(session, f"v.id IN ({marks})", (study_id, *map(int, ids)))


def vote_rows_through(session: Session, study_id: int, last_id: int) -> tuple[int, int]:
    """How many vote rows of a study have ``id <= last_id``: ``(all rows, rows that are not
    re-tests)``; the second is how many :func:`vote_rows_after` returns up to ``last_id``.
    Both are counted on covering indexes in one statement (one snapshot): the rows on
    (study_id, id), the re-tests among them on the partial ``ix_vote_retest`` (migration
    010), instead of reading every row for its ``retest_of``."""
    row = session.execute(
        text(
            "SELECT (SELECT count(*) FROM vote WHERE study_id = :s AND id <= :l), "
            "(SELECT count(*) FROM vote "
            "WHERE study_id = :s AND id <= :l AND retest_of IS NOT NULL)"
        ),
        {"s": study_id, "l": last_id},
    ).one()
    return int(row[0]), int(row[0]) - int(row[1])


def vote_count_through(session: Session, study_id: int, last_id: int) -> int:
    """How many vote rows (re-tests included) of a study have ``id <= last_id``, counted
    on the ``(study_id, id)`` index without reading the rows."""
    row = session.execute(
        text("SELECT count(*) FROM vote WHERE study_id = :s AND id <= :l"),
        {"s": study_id, "l": last_id},
    ).one()
    return int(row[0])


def study_created_at(session: Session, study_id: int) -> str | None:
    """When the study row was created, as text (None without such a study): with the
    study's id and fingerprint, what tells a study from one recreated under its name."""
    row = session.execute(
        text("SELECT created_at FROM study WHERE id = :s"), {"s": study_id}
    ).first()
    return None if row is None else str(row[0])


def adaptive_votes(session: Session, study_id: int) -> list[tuple[int, int, float | None]]:
    """``(item_id, choice code, selection_probability)`` of a study's current votes, oldest
    first (codes of :data:`annotate.choices.OUTCOME`)."""
    rows = session.execute(
        text(
            f"""SELECT v.item_id, {outcome_sql("v.choice")}, v.selection_probability
               FROM current_vote v WHERE v.study_id = :s ORDER BY v.id"""
        ),
        {"s": study_id},
    ).all()
    return [(int(i), int(c), None if p is None else float(p)) for i, c, p in rows]


def pair_questions(session: Session, study_id: int) -> dict[int, tuple[str, str, str]]:
    """Item id -> ``(first question key, second question key, subject)`` of a difficulty study."""
    rows = _raw_rows(
        session,
        """SELECT p.item_id, q1.key, q2.key, q1.subject FROM questionpair p
           JOIN item i ON i.id = p.item_id JOIN question q1 ON q1.id = p.first_id
           JOIN question q2 ON q2.id = p.second_id WHERE i.study_id = ?""",
        (int(study_id),),
    )
    return {int(i): (a, b, subj) for i, a, b, subj in rows}


def battle_pairs(session: Session, study_id: int) -> dict[int, tuple[str, str, str]]:
    """Item id -> ``(model_a, model_b, prompt category)`` of an arena study."""
    rows = _raw_rows(
        session,
        """SELECT b.item_id, b.model_a, b.model_b, coalesce(p.category, '') FROM battle b
           JOIN item i ON i.id = b.item_id LEFT JOIN prompt p ON p.id = b.prompt_id
           WHERE i.study_id = ?""",
        (int(study_id),),
    )
    return {int(i): (a, b, c) for i, a, b, c in rows}


# --- reservations (overlap cap under concurrency) ----------------------------


def item_slots(
    session: Session, study_id: int, annotator: int, item_ids: Sequence[int], now: float
) -> dict[int, tuple[int, int]]:
    """Per item: ``(current votes, live reservations)`` of annotators other than ``annotator``.

    Their sum is how many of the item's overlap slots others have taken.
    """
    out: dict[int, tuple[int, int]] = {}
    ids = list(item_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join(f":i{k}" for k in range(len(chunk)))
        params: dict[str, Any] = {f"i{k}": v for k, v in enumerate(chunk)}
        params.update({"s": study_id, "a": annotator, "now": now})
        rows = session.execute(
            text(
                f"""SELECT i.id,
                     (SELECT count(*) FROM current_vote v WHERE v.study_id = :s
                        AND v.item_id = i.id AND v.annotator_id != :a),
                     (SELECT count(*) FROM reservation r WHERE r.item_id = i.id
                        AND r.annotator_id != :a AND r.expires_at > :now)
                   FROM item i WHERE i.id IN ({marks})"""
            ),
            params,
        ).all()
        out.update({int(i): (int(v), int(r)) for i, v, r in rows})
    return out


def reserve(
    session: Session, study_id: int, annotator: int, item_id: int, expires_at: float
) -> None:
    """Hold ``item_id`` for the annotator until ``expires_at``, replacing their previous hold."""
    session.execute(
        text(
            """INSERT INTO reservation (study_id, item_id, annotator_id, expires_at)
               VALUES (:s, :i, :a, :e)
               ON CONFLICT (study_id, annotator_id)
               DO UPDATE SET item_id = excluded.item_id, expires_at = excluded.expires_at"""
        ),
        {"s": study_id, "i": item_id, "a": annotator, "e": expires_at},
    )


def release(session: Session, study_id: int, annotator: int) -> None:
    """End the annotator's hold in the study, if any."""
    session.execute(
        text("DELETE FROM reservation WHERE study_id = :s AND annotator_id = :a"),
        {"s": study_id, "a": annotator},
    )


def reservation_of(session: Session, study_id: int, annotator: int) -> tuple[int, float] | None:
    """``(item_id, expires_at)`` of the annotator's hold in the study, or None."""
    row = session.execute(
        text(
            "SELECT item_id, expires_at FROM reservation WHERE study_id = :s AND annotator_id = :a"
        ),
        {"s": study_id, "a": annotator},
    ).first()
    return None if row is None else (int(row[0]), float(row[1]))


# --- self-identifying responses (annotate.services.identity) -------------------


def arena_response_texts(session: Session, study_id: int) -> list[tuple[int, str, str]]:
    """Every response of an arena study as ``(prompt row id, model, text)``."""
    rows = session.execute(
        text(
            """SELECT r.prompt_id, r.model, r.text FROM modelresponse r
               JOIN prompt p ON p.id = r.prompt_id WHERE p.study_id = :s"""
        ),
        {"s": study_id},
    ).all()
    return [(int(p), m, t) for p, m, t in rows]


def arena_battle_prompts(session: Session, study_id: int) -> list[tuple[str, int | None, str, str]]:
    """Every battle of an arena study as ``(item key, prompt row id, model_a, model_b)``."""
    rows = session.execute(
        text(
            """SELECT i.key, b.prompt_id, b.model_a, b.model_b FROM battle b
               JOIN item i ON i.id = b.item_id WHERE i.study_id = :s
               ORDER BY i.position, i.id"""
        ),
        {"s": study_id},
    ).all()
    return [(k, None if p is None else int(p), a, b) for k, p, a, b in rows]


# --- the annotator's own history, item notes (issue 12) --------------------------


@dataclass(frozen=True)
class HistoryRow:
    """One of an annotator's current votes with the text that names its item.

    ``first_text`` and ``second_text`` are the two questions (as defined in the study
    file) of a question pair; for a battle ``first_text`` is the prompt and
    ``second_text`` is empty. Model names are never part of it.
    """

    item_id: int
    key: str
    vote_uuid: str
    choice: str
    swapped: bool
    created_at: datetime
    first_text: str
    second_text: str


def _utc(value: Any) -> datetime:
    """A stored timestamp (datetime or SQLite text) as an aware UTC datetime."""
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def own_history(session: Session, study_id: int, annotator: int, kind: str) -> list[HistoryRow]:
    """One annotator's current votes in a study, newest first (never anyone else's)."""
    if kind == "difficulty":
        sql = """SELECT v.item_id, i.key, v.uuid, v.choice, v.swapped, v.created_at,
                        q1.text, q2.text
                 FROM current_vote v JOIN item i ON i.id = v.item_id
                 JOIN questionpair p ON p.item_id = v.item_id
                 JOIN question q1 ON q1.id = p.first_id JOIN question q2 ON q2.id = p.second_id
                 WHERE v.study_id = :s AND v.annotator_id = :a ORDER BY v.id DESC"""
    else:
        sql = """SELECT v.item_id, i.key, v.uuid, v.choice, v.swapped, v.created_at,
                        COALESCE(pr.text, ''), ''
                 FROM current_vote v JOIN item i ON i.id = v.item_id
                 JOIN battle b ON b.item_id = v.item_id
                 LEFT JOIN prompt pr ON pr.id = b.prompt_id
                 WHERE v.study_id = :s AND v.annotator_id = :a ORDER BY v.id DESC"""
    rows = session.execute(text(sql), {"s": study_id, "a": annotator}).all()
    return [
        HistoryRow(int(i), k, u, c, bool(sw), _utc(t), str(a), str(b))
        for i, k, u, c, sw, t, a, b in rows
    ]


def vote_by_uuid(session: Session, vote_uuid: str) -> VoteRow | None:
    """The vote row with this uuid, if stored."""
    v = session.exec(select(Vote).where(Vote.uuid == vote_uuid)).first()
    return None if v is None else _vote_row(v)


@dataclass(frozen=True)
class NoteRow:
    """A comment or flag on an item, with the names an export needs."""

    uuid: str
    study: str
    item_key: str
    annotator: str
    vote_uuid: str | None
    kind: str
    reason: str
    text: str
    created_at: datetime


NOTE_COLUMNS = (
    "note_id",
    "study",
    "item_id",
    "annotator",
    "vote_id",
    "kind",
    "reason",
    "text",
    "created_at",
)
"""The columns of ``item_notes.<ext>`` (the fields of :class:`NoteRow`, in order)."""


def insert_item_note(
    session: Session,
    *,
    study_id: int,
    item_id: int,
    annotator: int,
    kind: str,
    reason: str,
    body: str,
    vote_uuid: str | None,
    note_uuid: str | None = None,
    created_at: datetime | None = None,
) -> str:
    """Add one comment or flag; returns its uuid."""
    note = ItemNote(
        uuid=note_uuid or str(uuidlib.uuid4()),
        study_id=study_id,
        item_id=item_id,
        annotator_id=annotator,
        vote_uuid=vote_uuid,
        kind=kind,
        reason=reason,
        text=body,
        created_at=created_at or utc_now(),
    )
    session.add(note)
    session.flush()
    return note.uuid


def item_notes(session: Session, study_id: int | None) -> list[NoteRow]:
    """Every comment and flag of a study (or of all studies), oldest first."""
    where = "" if study_id is None else "WHERE n.study_id = :s"
    rows = session.execute(
        text(
            f"""SELECT n.uuid, s.name, i.key, a.name, n.vote_uuid, n.kind, n.reason, n.text,
                       n.created_at
                FROM itemnote n JOIN study s ON s.id = n.study_id
                JOIN item i ON i.id = n.item_id JOIN annotator a ON a.id = n.annotator_id
                {where} ORDER BY n.id"""
        ),
        {} if study_id is None else {"s": study_id},
    ).all()
    return [
        NoteRow(u, st, k, a, v, kd, r or "", t or "", _utc(c))
        for u, st, k, a, v, kd, r, t, c in rows
    ]


def stored_note_uuids(session: Session, uuids: Iterable[str]) -> set[str]:
    """Which of ``uuids`` are already stored as item notes."""
    wanted = list(uuids)
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        found |= set(session.exec(select(ItemNote.uuid).where(col(ItemNote.uuid).in_(chunk))))
    return found


# --- reads for the arrays, exports and imports (all SQL lives in this module) ---------


def item_keys(session: Session, study_id: int) -> list[tuple[int, str]]:
    """``(item id, key)`` of every item of a study, in file order."""
    rows = session.execute(
        text("SELECT id, key FROM item WHERE study_id = :s ORDER BY position, id"), {"s": study_id}
    ).all()
    return [(int(i), str(k)) for i, k in rows]


def current_vote_codes(session: Session, study_id: int) -> list[tuple[int, ...]]:
    """The study's current votes, oldest first, as integer tuples.

    Each tuple is ``(item_id, annotator_id, choice code, swapped, response_ms or -1,
    fast)`` with the choice codes of :data:`annotate.choices.OUTCOME`. Read through the
    DB-API cursor (no row objects): this is the arrays' hot path.
    """
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        cur.execute(
            q(
                f"""SELECT item_id, annotator_id, {outcome_sql("choice")},
                       CASE WHEN swapped THEN 1 ELSE 0 END, coalesce(response_ms, -1),
                       CASE WHEN fast THEN 1 ELSE 0 END
                FROM current_vote WHERE study_id = ? ORDER BY id"""
            ),
            (study_id,),
        )
        return list(cur.fetchall())
    finally:
        cur.close()


def question_subjects(session: Session, study_id: int) -> list[tuple[str, str]]:
    """``(question key, subject)`` of every question of a study, in file order."""
    rows = session.execute(
        text("SELECT key, subject FROM question WHERE study_id = :s ORDER BY id"),
        {"s": study_id},
    ).all()
    return [(str(k), str(subj)) for k, subj in rows]


def pair_items(session: Session, study_id: int) -> list[tuple[str, int, str, str, str]]:
    """``(pair key, position, first question key, second question key, subject)``, in order."""
    rows = session.execute(
        text(
            """SELECT i.key, i.position, q1.key, q2.key, q1.subject FROM item i
               JOIN questionpair p ON p.item_id = i.id
               JOIN question q1 ON q1.id = p.first_id JOIN question q2 ON q2.id = p.second_id
               WHERE i.study_id = :s ORDER BY i.position"""
        ),
        {"s": study_id},
    ).all()
    return [tuple(r) for r in rows]


def battle_items(session: Session, study_id: int) -> list[tuple[str, int, str | None, str, str]]:
    """``(battle key, position, prompt key or None, model_a, model_b)``, in order."""
    rows = session.execute(
        text(
            """SELECT i.key, i.position, p.key, b.model_a, b.model_b FROM item i
               JOIN battle b ON b.item_id = i.id LEFT JOIN prompt p ON p.id = b.prompt_id
               WHERE i.study_id = :s ORDER BY i.position"""
        ),
        {"s": study_id},
    ).all()
    return [tuple(r) for r in rows]


def study_vote_chain(session: Session, study_id: int) -> list[tuple[Any, ...]]:
    """Every vote row of a study (retractions and superseded rows too), oldest first.

    Each tuple is ``(uuid, annotator_id, item_id, choice, swapped, response_ms, fast,
    created_at, supersedes)`` as stored.
    """
    rows = session.execute(
        text(
            """SELECT uuid, annotator_id, item_id, choice, swapped, response_ms, fast,
                      created_at, supersedes
               FROM vote WHERE study_id = :s AND retest_of IS NULL ORDER BY id"""
        ),
        {"s": study_id},
    ).all()
    return [tuple(r) for r in rows]


def vote_studies(session: Session, uuids: Iterable[str]) -> dict[str, str]:
    """Vote uuid -> name of the study that stores it, for those of ``uuids`` stored."""
    todo = list(uuids)
    out: dict[str, str] = {}
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        for start in range(0, len(todo), 500):
            chunk = todo[start : start + 500]
            cur.execute(
                q(
                    f"""SELECT v.uuid, s.name FROM vote v JOIN study s ON s.id = v.study_id
                    WHERE v.uuid IN ({", ".join("?" for _ in chunk)})"""
                ),
                chunk,
            )
            out.update({u: n for u, n in cur.fetchall()})
    finally:
        cur.close()
    return out


def vote_count(session: Session) -> int:
    """How many vote rows the store holds (every study, retractions included)."""
    return int(session.execute(text("SELECT COUNT(*) FROM vote")).scalar_one())


def study_has_votes(session: Session, study_id: int) -> bool:
    """Whether any vote row (current or not) belongs to the study."""
    row = session.execute(
        text("SELECT 1 FROM vote WHERE study_id = :s LIMIT 1"), {"s": study_id}
    ).first()
    return row is not None


def all_vote_uuids(session: Session) -> list[str]:
    """The uuid of every stored vote row (for a set comparison against a large import)."""
    conn, _ = _raw(session)
    cur = conn.cursor()
    try:
        cur.execute("SELECT uuid FROM vote")
        return [u for (u,) in cur.fetchall()]
    finally:
        cur.close()


def any_vote_stored(session: Session, uuids: Sequence[str]) -> bool:
    """Whether any of ``uuids`` is a stored vote id (looked up 500 at a time)."""
    conn, q = _raw(session)
    cur = conn.cursor()
    try:
        for start in range(0, len(uuids), 500):
            chunk = list(uuids[start : start + 500])
            cur.execute(
                q(f"SELECT 1 FROM vote WHERE uuid IN ({', '.join('?' for _ in chunk)}) LIMIT 1"),
                chunk,
            )
            if cur.fetchone():
                return True
        return False
    finally:
        cur.close()


def prompt_ids(session: Session, study_id: int) -> dict[str, int]:
    """Prompt key -> row id of an arena study's prompts."""
    rows = session.execute(
        text("SELECT key, id FROM prompt WHERE study_id = :s"), {"s": study_id}
    ).all()
    return {str(k): int(i) for k, i in rows}


def response_keys(session: Session, study_id: int) -> set[tuple[str, str]]:
    """``(prompt key, model)`` of every stored response of an arena study."""
    rows = session.execute(
        text(
            """SELECT p.key, r.model FROM modelresponse r
               JOIN prompt p ON p.id = r.prompt_id WHERE p.study_id = :s"""
        ),
        {"s": study_id},
    ).all()
    return {(str(k), str(m)) for k, m in rows}


def question_scores(session: Session, study_id: int) -> dict[tuple[int, str], float]:
    """``(question row id, model)`` -> stored score of a difficulty study's matrix."""
    rows = session.execute(
        text(
            """SELECT r.question_id, r.model, r.score FROM responsescore r
               JOIN question q ON q.id = r.question_id WHERE q.study_id = :s"""
        ),
        {"s": study_id},
    ).all()
    return {(int(q), str(m)): float(v) for q, m, v in rows}


# --- quality checks: swapped re-tests, gold answers, questionnaire (issue 16) ---------


def own_vote_order(
    session: Session, study_id: int, annotator: int
) -> list[tuple[int, str, str, bool]]:
    """The annotator's current votes in the study as ``(item_id, key, uuid, swapped)``,
    in the order they were cast (re-tests are not current votes)."""
    rows = session.execute(
        text(
            """SELECT v.item_id, i.key, v.uuid, v.swapped FROM current_vote v
               JOIN item i ON i.id = v.item_id
               WHERE v.study_id = :s AND v.annotator_id = :a ORDER BY v.id"""
        ),
        {"s": study_id, "a": annotator},
    ).all()
    return [(int(i), str(k), str(u), bool(sw)) for i, k, u, sw in rows]


_RETEST_IDS = "v.id IN (SELECT r.id FROM vote r WHERE r.study_id = :s AND r.retest_of IS NOT NULL)"
"""The study's re-test rows (``:s``) as ``v``, read on the partial index ``ix_vote_retest``
(migration 010), which covers the subquery: SQLite's planner then takes it over
``ix_vote_study_id``, and the study's other votes are never read (with ``v.study_id = :s``
in the outer query instead, the two indexes tie and either may be taken)."""


_CURRENT_RETEST = f"""vote v WHERE {_RETEST_IDS} AND v.retest_of IS NOT NULL
               AND v.choice != 'retract'
               AND NOT EXISTS (SELECT 1 FROM vote w WHERE w.supersedes = v.uuid)"""
"""The current re-test votes of the study ``:s``: as ``current_vote``, for the re-test
chains."""


def retested_item_ids(session: Session, study_id: int, annotator: int) -> set[int]:
    """Items on which the annotator holds a current re-test vote."""
    rows = session.execute(
        text(f"""SELECT v.item_id FROM {_CURRENT_RETEST} AND v.annotator_id = :a"""),
        {"s": study_id, "a": annotator},
    ).all()
    return {int(r[0]) for r in rows}


def latest_retest_vote(session: Session, study_id: int, annotator: int) -> VoteRow | None:
    """The annotator's most recent current re-test vote in the study."""
    row = session.execute(
        text(
            f"""SELECT v.id FROM {_CURRENT_RETEST} AND v.annotator_id = :a
               ORDER BY v.id DESC LIMIT 1"""
        ),
        {"s": study_id, "a": annotator},
    ).first()
    if row is None:
        return None
    v = session.get(Vote, row[0])
    assert v is not None
    return _vote_row(v)


def retest_choices(session: Session, study_id: int) -> list[tuple[int, int, str, str]]:
    """``(annotator_id, item_id, original choice, re-test choice)`` for every current
    re-test vote of the study whose original is still a current vote; choices are
    relative to the item (as stored), so comparing them un-swaps the sides."""
    rows = session.execute(
        text(
            f"""SELECT v.annotator_id, v.item_id, c.choice, v.choice FROM vote v
               JOIN current_vote c ON c.annotator_id = v.annotator_id
                    AND c.item_id = v.item_id
               WHERE {_RETEST_IDS} AND v.retest_of IS NOT NULL AND v.choice != 'retract'
               AND NOT EXISTS (SELECT 1 FROM vote w WHERE w.supersedes = v.uuid)
               ORDER BY v.id"""
        ),
        {"s": study_id},
    ).all()
    return [(int(a), int(i), str(c0), str(c1)) for a, i, c0, c1 in rows]


def gold_votes(session: Session, study_id: int) -> list[tuple[int, int, str, str]]:
    """``(annotator_id, item_id, choice, gold answer)`` for the current votes on gold items.

    The votes on gold items are found on ``ix_vote_study_item`` (a seek per gold item, in
    a subquery it covers); with ``v.study_id = :s`` in the outer query, SQLite's planner
    reads every vote of the study in id order instead (0.25 s at a million votes)."""
    rows = session.execute(
        text(
            """SELECT v.annotator_id, v.item_id, v.choice, g.answer FROM current_vote v
               JOIN goldanswer g ON g.item_id = v.item_id
               WHERE v.id IN (SELECT x.id FROM vote x WHERE x.study_id = :s
                              AND x.item_id IN (SELECT item_id FROM goldanswer))
               ORDER BY v.id"""
        ),
        {"s": study_id},
    ).all()
    return [(int(a), int(i), str(c), str(g)) for a, i, c, g in rows]


RETEST_COLUMNS = (
    "vote_id",
    "study",
    "annotator",
    "item_id",
    "choice",
    "left",
    "response_ms",
    "fast",
    "created_at",
    "supersedes",
    "retest_of",
)
"""Columns of the exported re-test votes (``retests.<fmt>``), every row of each chain."""


def retest_records(session: Session, study_id: int) -> list[tuple[Any, ...]]:
    """Every re-test vote row of the study (``RETEST_COLUMNS``), oldest first."""
    rows = session.execute(
        text(
            f"""SELECT v.uuid, s.name, s.kind, a.name, i.key, v.choice, v.swapped,
                      v.response_ms, v.fast, v.created_at, v.supersedes, v.retest_of
               FROM vote v JOIN study s ON s.id = v.study_id
               JOIN annotator a ON a.id = v.annotator_id JOIN item i ON i.id = v.item_id
               WHERE {_RETEST_IDS} ORDER BY v.id"""
        ),
        {"s": study_id},
    ).all()
    out = []
    for uuid, study, kind, ann, item, choice, swapped, ms, fast, created, sup, of in rows:
        left = LEFT_CHOICES["difficulty" if kind == "difficulty" else "arena"][bool(swapped)]
        out.append((uuid, study, ann, item, choice, str(left), ms, bool(fast), created, sup, of))
    return out


def has_answers(session: Session, study_id: int, annotator: int) -> bool:
    """Whether the annotator answered the study's questionnaire (one indexed lookup)."""
    row = session.execute(
        text("SELECT 1 FROM annotatoranswer WHERE study_id = :s AND annotator_id = :a LIMIT 1"),
        {"s": study_id, "a": annotator},
    ).first()
    return row is not None


def insert_answers(
    session: Session, study_id: int, annotator: int, answers: Sequence[tuple[str, str]]
) -> None:
    """Store the annotator's questionnaire answers ``(key, JSON list of choices)``.

    A second answer to the same question fails on the unique index (asked once).
    """
    for key, answer in answers:
        session.add(
            AnnotatorAnswer(study_id=study_id, annotator_id=annotator, key=key, answer=answer)
        )
    session.flush()


def own_answers(session: Session, study_id: int, annotator: int) -> dict[str, str]:
    """The annotator's questionnaire answers in the study: key -> JSON list of choices."""
    rows = session.execute(
        text("SELECT key, answer FROM annotatoranswer WHERE study_id = :s AND annotator_id = :a"),
        {"s": study_id, "a": annotator},
    ).all()
    return {str(k): str(a) for k, a in rows}


ANSWER_COLUMNS = ("study", "annotator", "key", "answer", "created_at")
"""Columns of the exported questionnaire answers (``annotators.<fmt>``)."""


def answer_records(session: Session, study_id: int) -> list[tuple[Any, ...]]:
    """Every questionnaire answer of the study (``ANSWER_COLUMNS``; ``answer`` the JSON
    list as stored), by annotator then question."""
    rows = session.execute(
        text(
            """SELECT s.name, a.name, x.key, x.answer, x.created_at FROM annotatoranswer x
               JOIN study s ON s.id = x.study_id JOIN annotator a ON a.id = x.annotator_id
               WHERE x.study_id = :s ORDER BY a.name, x.id"""
        ),
        {"s": study_id},
    ).all()
    return [tuple(r) for r in rows]


def study_answers(session: Session, study_id: int) -> list[tuple[int, str, str]]:
    """``(annotator_id, key, JSON list of choices)`` for every answer of the study."""
    rows = session.execute(
        text("SELECT annotator_id, key, answer FROM annotatoranswer WHERE study_id = :s"),
        {"s": study_id},
    ).all()
    return [(int(a), str(k), str(x)) for a, k, x in rows]


# --- browser links of ``annotate serve`` (issue 17) -------------------------------------


@dataclass(frozen=True)
class AccessLinkRow:
    """One link issued to an annotator: never the token, only who, where and when."""

    annotator: str
    study: str | None
    created_at: datetime
    revoked_at: datetime | None


@dataclass(frozen=True)
class TokenHolder:
    """Whom a live token belongs to (see :func:`token_holder`)."""

    annotator: str
    study: str | None


def live_link_of(session: Session, annotator: int) -> AccessLinkRow | None:
    """The annotator's live (not revoked) link, if any."""
    links = [r for r in access_links(session, annotator) if r.revoked_at is None]
    return links[0] if links else None


def insert_access_token(
    session: Session, *, token_hash: str, annotator: int, study_id: int | None
) -> None:
    """Store the hash of a new token for ``annotator`` (limited to ``study_id`` if given)."""
    session.add(AccessToken(token_hash=token_hash, annotator_id=annotator, study_id=study_id))
    session.flush()


def access_links(session: Session, annotator: int | None = None) -> list[AccessLinkRow]:
    """Every link issued (or the annotator's), oldest first."""
    where = "" if annotator is None else "WHERE t.annotator_id = :a"
    rows = session.execute(
        text(
            f"""SELECT a.name, s.name, t.created_at, t.revoked_at
                FROM accesstoken t JOIN annotator a ON a.id = t.annotator_id
                LEFT JOIN study s ON s.id = t.study_id
                {where} ORDER BY t.id"""
        ),
        {} if annotator is None else {"a": annotator},
    ).all()
    return [
        AccessLinkRow(
            str(a), None if st is None else str(st), _utc(c), None if r is None else _utc(r)
        )
        for a, st, c, r in rows
    ]


def revoke_access_tokens(session: Session, annotator: int) -> int:
    """Mark the annotator's live links revoked; returns how many were live.

    Links are working state like reservations: the row is kept, ``revoked_at`` is set.
    """
    result = session.execute(
        update(AccessToken)
        .where(col(AccessToken.annotator_id) == annotator, col(AccessToken.revoked_at).is_(None))
        .values(revoked_at=utc_now())
    )
    return int(getattr(result, "rowcount", 0) or 0)


def token_holder(session: Session, token_hash: str) -> TokenHolder | None:
    """The annotator (and study) of a live token with this hash, or None."""
    row = session.execute(
        text(
            """SELECT a.name, s.name FROM accesstoken t
               JOIN annotator a ON a.id = t.annotator_id
               LEFT JOIN study s ON s.id = t.study_id
               WHERE t.token_hash = :h AND t.revoked_at IS NULL"""
        ),
        {"h": token_hash},
    ).first()
    return (
        None if row is None else TokenHolder(str(row[0]), None if row[1] is None else str(row[1]))
    )


def live_token_hashes(session: Session, hashes: Sequence[str]) -> set[str]:
    """Which of ``hashes`` still name a live token (the server drops the others' sessions)."""
    found: set[str] = set()
    wanted = list(hashes)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        found |= {
            str(h)
            for h in session.exec(
                select(AccessToken.token_hash).where(
                    col(AccessToken.token_hash).in_(chunk), col(AccessToken.revoked_at).is_(None)
                )
            )
        }
    return found
