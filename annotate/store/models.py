"""The database tables. This is the only module with ``table=True``.

Both study kinds share one vote table: a vote is one pairwise comparison of an
:class:`Item`, which is either a :class:`QuestionPair` (difficulty study) or a
:class:`Battle` (arena study). Votes are append-only: a change of mind or an
undo is a new row whose ``supersedes`` names the vote it replaces.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel

_POSTGRESQL_WHERE: list[tuple[Index, str]] = []
"""The partial indexes and their conditions, for :func:`postgresql_options`."""


def _partial_index(name: str, *columns: str, where: str, unique: bool = True) -> Index:
    """An index (unique unless ``unique`` is false) on the rows where the SQL condition
    ``where`` holds, on both back ends: SQLite's ``WHERE`` given here, PostgreSQL's by
    :func:`postgresql_options`."""
    index = Index(name, *columns, unique=unique, sqlite_where=text(where))
    _POSTGRESQL_WHERE.append((index, where))
    return index


def postgresql_options() -> None:
    """Give the partial indexes their PostgreSQL ``WHERE`` (``postgresql_where``), as
    they had it from their definition; called by :mod:`annotate.store.engine` for every
    PostgreSQL engine, before anything is created or migrated on it. Naming a dialect's
    option makes SQLAlchemy import that dialect (some 30 ms), so the SQLite store, which
    never uses it, leaves it out. Idempotent, and thread-safe for that reason."""
    for index, where in _POSTGRESQL_WHERE:
        if index.dialect_options["postgresql"].get("where") is None:  # (the default)
            index.dialect_kwargs["postgresql_where"] = text(where)


def utc_now() -> datetime:
    """The current time in UTC (timezone-aware)."""
    return datetime.now(UTC)


class Study(SQLModel, table=True):
    """A difficulty study or an arena study."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    """Short unique name, used on the command line (``--study NAME``)."""
    kind: str
    """``difficulty`` or ``arena``."""
    title: str = ""
    description: str = ""
    settings_json: str = "{}"
    """Study settings (overlap, seed, response-time floor, reveal) as JSON."""
    fingerprint: str = ""
    """SHA-256 of the study's items, so a re-import can tell same from different."""
    created_at: datetime = Field(default_factory=utc_now)


class Question(SQLModel, table=True):
    """A benchmark question of a difficulty study."""

    __table_args__ = (UniqueConstraint("study_id", "key"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE", index=True)
    key: str
    """The question's id in the study file."""
    subject: str
    text: str
    choices_json: str | None = None
    """JSON list of answer choices, when the question has them."""


class ResponseScore(SQLModel, table=True):
    """One entry of the response matrix: a model's score on a question, in [0, 1]."""

    __table_args__ = (UniqueConstraint("question_id", "model"),)

    id: int | None = Field(default=None, primary_key=True)
    question_id: int = Field(foreign_key="question.id", ondelete="CASCADE", index=True)
    model: str
    score: float


class ModelInfo(SQLModel, table=True):
    """Optional metadata about a model in a study (for example its pool or size)."""

    __table_args__ = (UniqueConstraint("study_id", "model"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE", index=True)
    model: str
    meta_json: str = "{}"


class Prompt(SQLModel, table=True):
    """A prompt of an arena study."""

    __table_args__ = (UniqueConstraint("study_id", "key"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE", index=True)
    key: str
    text: str
    category: str = ""


class ModelResponse(SQLModel, table=True):
    """A named model's response to a prompt."""

    __table_args__ = (UniqueConstraint("prompt_id", "model"),)

    id: int | None = Field(default=None, primary_key=True)
    prompt_id: int = Field(foreign_key="prompt.id", ondelete="CASCADE", index=True)
    model: str
    text: str


class Item(SQLModel, table=True):
    """Anything an annotator votes on: a question pair or a battle."""

    __table_args__ = (UniqueConstraint("study_id", "key"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE", index=True)
    key: str
    """The pair's or battle's id in the study file."""
    position: int = 0
    """Order in the study file."""


class QuestionPair(SQLModel, table=True):
    """A difficulty item: two questions of the same subject."""

    item_id: int = Field(foreign_key="item.id", ondelete="CASCADE", primary_key=True)
    first_id: int = Field(foreign_key="question.id", ondelete="CASCADE", index=True)
    second_id: int = Field(foreign_key="question.id", ondelete="CASCADE", index=True)


class Battle(SQLModel, table=True):
    """An arena item: two models answering one prompt.

    ``prompt_id`` is empty for battles imported from vote records that carry no
    text (Chatbot Arena or LLMFAO files without their prompts).
    """

    item_id: int = Field(foreign_key="item.id", ondelete="CASCADE", primary_key=True)
    prompt_id: int | None = Field(
        default=None, foreign_key="prompt.id", ondelete="CASCADE", index=True
    )
    model_a: str
    model_b: str


class Annotator(SQLModel, table=True):
    """A person (or an imported judge id) who votes."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    created_at: datetime = Field(default_factory=utc_now)


class SubjectChoice(SQLModel, table=True):
    """An annotator opting out of (or back into) a subject of a study. Append-only."""

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", ondelete="CASCADE", index=True)
    subject: str
    excluded: bool
    created_at: datetime = Field(default_factory=utc_now)


class Vote(SQLModel, table=True):
    """One pairwise judgment. Never updated or deleted.

    ``choice`` is relative to the item as defined in the study file, not as
    displayed: ``first``, ``second`` or ``skip`` for question pairs;
    ``model_a``, ``model_b``, ``tie`` or ``both_bad`` for battles; ``retract``
    for an undo (a row that withdraws the vote it supersedes). ``swapped`` is
    true when the second question (or model B) was shown on the left.
    """

    __table_args__ = (
        # Uniqueness of the vote id and of ``supersedes`` (each vote is replaced at most
        # once) as named unique indexes, not table constraints (migration 005): a bulk
        # import drops and rebuilds them inside its transaction like the other indexes.
        Index("ux_vote_uuid", "uuid", unique=True),
        # Only rows that replace another are in it (migration 009): most rows supersede
        # nothing, and NULLs never collide in a unique index on either back end.
        _partial_index(
            "ux_vote_supersedes",
            "supersedes",
            where="supersedes IS NOT NULL",
        ),
        # At most one chain of votes per annotator and item: only one row may
        # start it; every later row supersedes exactly one earlier row.
        # A swapped re-test (``retest_of`` set) is its own chain beside it, also at
        # most one per annotator and item (migration 008 narrows the first index).
        _partial_index(
            "ux_vote_chain_root",
            "annotator_id",
            "item_id",
            where="supersedes IS NULL AND retest_of IS NULL",
        ),
        _partial_index(
            "ux_vote_retest_root",
            "annotator_id",
            "item_id",
            where="supersedes IS NULL AND retest_of IS NOT NULL",
        ),
        Index("ix_vote_study_item", "study_id", "item_id"),
        # The re-test rows of a study, oldest first (migration 010): the report's
        # re-test agreement and the export of re-tests read them through it instead of
        # every vote of the study (most studies have none or a few per cent). With
        # ``retest_of`` in it, it covers ``SELECT id ... WHERE study_id = ? AND retest_of
        # IS NOT NULL``, so SQLite's planner (no statistics) prefers it to
        # ix_vote_study_id for that (``repo._RETEST_IDS``); without, the two tie.
        _partial_index(
            "ix_vote_retest",
            "study_id",
            "id",
            "retest_of",
            where="retest_of IS NOT NULL",
            unique=False,
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    uuid: str = Field(max_length=36)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", ondelete="CASCADE", index=True)
    item_id: int = Field(foreign_key="item.id", ondelete="CASCADE")
    choice: str
    swapped: bool = False
    response_ms: int | None = None
    fast: bool = False
    """Faster than the study's response-time floor (still counts; the monitor flags it)."""
    created_at: datetime = Field(default_factory=utc_now)
    supersedes: str | None = None
    """uuid of the vote this row replaces (a change of mind or an undo)."""
    selection_probability: float | None = None
    """Probability with which an adaptive schedule chose this item for this annotator
    when it was shown (migration 007); empty for other schedules and imported votes
    without it. Inverse-propensity weights come from it (``ranking.adaptive``)."""
    retest_of: str | None = None
    """Set on every row of a swapped re-test chain (migration 008): the uuid of the
    annotator's vote on the item that the re-test repeats. Re-test rows are not in the
    ``current_vote`` view (they never count twice in the fits)."""


class Reservation(SQLModel, table=True):
    """An item of an overlap-capped study shown to an annotator and held for them.

    While live (``expires_at`` in the future) it counts against the item's cap for
    everyone else, so that annotators working at once never take more slots than the
    cap allows. An annotator holds at most one per study; it ends with their vote, when
    they move to another item or leave, or when it expires. Unlike votes, reservations
    are working state: they are replaced and deleted.
    """

    __table_args__ = (
        UniqueConstraint("study_id", "annotator_id"),
        Index("ix_reservation_item", "item_id", "expires_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE")
    item_id: int = Field(foreign_key="item.id", ondelete="CASCADE")
    annotator_id: int = Field(foreign_key="annotator.id", ondelete="CASCADE")
    expires_at: float
    """When the hold lapses, in UNIX seconds (UTC)."""


class ItemNote(SQLModel, table=True):
    """An annotator's comment on an item, or a flag saying the item is broken. Append-only.

    ``vote_uuid`` names the annotator's vote on the item when there was one (the note
    is stored with that vote); otherwise the note is on the item alone. ``kind`` is
    ``comment`` or ``flag``; a flag's ``reason`` is one of
    :data:`annotate.services.notes.FLAG_REASONS`. ``text`` is stored exactly as typed
    and sanitised wherever it is shown.
    """

    __table_args__ = (
        UniqueConstraint("uuid"),
        Index("ix_itemnote_study_item", "study_id", "item_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    uuid: str = Field(max_length=36)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE")
    item_id: int = Field(foreign_key="item.id", ondelete="CASCADE")
    annotator_id: int = Field(foreign_key="annotator.id", ondelete="CASCADE", index=True)
    vote_uuid: str | None = None
    """uuid of the annotator's vote on the item when the note was written (None: no vote)."""
    kind: str
    """``comment`` or ``flag``."""
    reason: str = ""
    """A flag's reason (``typo``, ``identical questions``, ``response cut off``, ``other``)."""
    text: str = ""
    created_at: datetime = Field(default_factory=utc_now)


class GoldAnswer(SQLModel, table=True):
    """The known answer of a gold item (migration 008): never shown to annotators.

    ``answer`` is a stored choice relative to the item as defined in the study file
    (``first`` / ``second``; ``model_a``, ``model_b``, ``tie`` or ``both_bad``).
    """

    item_id: int = Field(foreign_key="item.id", ondelete="CASCADE", primary_key=True)
    answer: str


class AnnotatorAnswer(SQLModel, table=True):
    """An annotator's answer to one question of a study's questionnaire (migration 008).

    ``answer`` is a JSON list of the chosen choices, as declared in ``study.toml`` (one
    element unless the question is ``multiple``), stored exactly as given.
    """

    __table_args__ = (UniqueConstraint("study_id", "annotator_id", "key"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", ondelete="CASCADE", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", ondelete="CASCADE", index=True)
    key: str
    answer: str
    created_at: datetime = Field(default_factory=utc_now)


class AccessToken(SQLModel, table=True):
    """A browser link the lead issued to one annotator (``annotate annotators add``).

    Only the SHA-256 of the token is stored (the link shows the token once). The token
    fixes the annotator's name in ``annotate serve``; ``study_id``, when set, limits the
    link to that study. Revoking sets ``revoked_at`` (the row stays, for the record). An
    annotator holds at most one live link: a partial unique index, on both back ends.
    """

    __table_args__ = (
        Index("ux_accesstoken_hash", "token_hash", unique=True),
        _partial_index(
            "ux_accesstoken_live",
            "annotator_id",
            where="revoked_at IS NULL",
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64)
    """Hex SHA-256 of the token."""
    annotator_id: int = Field(foreign_key="annotator.id", ondelete="CASCADE")
    study_id: int | None = Field(default=None, foreign_key="study.id", ondelete="CASCADE")
    created_at: datetime = Field(default_factory=utc_now)
    revoked_at: datetime | None = None
