"""The vocabulary of votes: one :class:`Choice` enum and one mapping to outcome codes.

A stored vote's ``choice`` is relative to the item as the study file defines it, not
as it was displayed: ``first``, ``second`` or ``skip`` for a question pair (the first
or second question is harder, or the annotator cannot judge); ``model_a``,
``model_b``, ``tie`` or ``both_bad`` for a battle; ``retract`` for an undo (a row that
withdraws the vote it supersedes). The store, the arrays, the monitor, the exports and
the importers all use these names, and :data:`OUTCOME` is the only mapping from a
choice to the integer code of :attr:`annotate.services.arrays.VoteArrays.choice`; the
SQL ``CASE`` that computes the code in queries is generated from it
(:func:`outcome_sql`).

Dependency-free (no NumPy, no store): screens, services and the store import it alike.

Examples
--------
>>> Choice("model_a") is Choice.MODEL_A, Choice.MODEL_A == "model_a"
(True, True)
>>> OUTCOME[Choice.MODEL_B], OUTCOME[Choice.SECOND]
(<Outcome.SECOND: 2>, <Outcome.SECOND: 2>)
>>> choices_for("arena")
(<Choice.MODEL_A: 'model_a'>, <Choice.MODEL_B: 'model_b'>, <Choice.TIE: 'tie'>, \
<Choice.BOTH_BAD: 'both_bad'>)
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Choice(StrEnum):
    """A stored vote's choice (relative to the item as defined, not as shown)."""

    FIRST = "first"
    """Difficulty: the item's first question is harder."""
    SECOND = "second"
    """Difficulty: the item's second question is harder."""
    SKIP = "skip"
    """Difficulty: the annotator cannot judge."""
    MODEL_A = "model_a"
    """Arena: model A's response is better."""
    MODEL_B = "model_b"
    """Arena: model B's response is better."""
    TIE = "tie"
    """Arena: the two responses are equally good."""
    BOTH_BAD = "both_bad"
    """Arena: both responses are bad."""
    RETRACT = "retract"
    """An undo: the row withdraws the vote it supersedes (never a current vote)."""


class Outcome(IntEnum):
    """The integer code of a choice in vote arrays (both study kinds share it)."""

    RETRACTED = -1
    """An undo row (and anything that is not a choice)."""
    SKIP = 0
    FIRST = 1
    """The item's first half is chosen: first question harder, or model A better."""
    SECOND = 2
    """The item's second half is chosen: second question harder, or model B better."""
    TIE = 3
    BOTH_BAD = 4


OUTCOME: dict[Choice, Outcome] = {
    Choice.FIRST: Outcome.FIRST,
    Choice.SECOND: Outcome.SECOND,
    Choice.SKIP: Outcome.SKIP,
    Choice.MODEL_A: Outcome.FIRST,
    Choice.MODEL_B: Outcome.SECOND,
    Choice.TIE: Outcome.TIE,
    Choice.BOTH_BAD: Outcome.BOTH_BAD,
    Choice.RETRACT: Outcome.RETRACTED,
}
"""The one mapping from a choice to its outcome code."""

DIFFICULTY_CHOICES: tuple[Choice, ...] = (Choice.FIRST, Choice.SECOND, Choice.SKIP)
"""The choices of a vote on a question pair."""
ARENA_CHOICES: tuple[Choice, ...] = (
    Choice.MODEL_A,
    Choice.MODEL_B,
    Choice.TIE,
    Choice.BOTH_BAD,
)
"""The choices of a vote on a battle."""

LEFT_CHOICES: dict[str, tuple[Choice, Choice]] = {
    "difficulty": (Choice.FIRST, Choice.SECOND),
    "arena": (Choice.MODEL_A, Choice.MODEL_B),
}
"""Per study kind, the item's (first, second) half: what an export's ``left`` column names."""


def choices_for(kind: str) -> tuple[Choice, ...]:
    """The choices a vote in a study of ``kind`` may store (a retraction aside)."""
    return DIFFICULTY_CHOICES if kind == "difficulty" else ARENA_CHOICES


def outcome_sql(column: str) -> str:
    """An SQL ``CASE`` giving :data:`OUTCOME` of ``column`` (-1 for anything else).

    Examples
    --------
    >>> print(outcome_sql("v.choice"))  # doctest: +NORMALIZE_WHITESPACE
    CASE v.choice WHEN 'first' THEN 1 WHEN 'second' THEN 2 WHEN 'skip' THEN 0
    WHEN 'model_a' THEN 1 WHEN 'model_b' THEN 2 WHEN 'tie' THEN 3
    WHEN 'both_bad' THEN 4 ELSE -1 END
    """
    whens = " ".join(
        f"WHEN '{c.value}' THEN {int(o)}" for c, o in OUTCOME.items() if o != Outcome.RETRACTED
    )
    return f"CASE {column} {whens} ELSE {int(Outcome.RETRACTED)} END"
