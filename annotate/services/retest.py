"""Swapped re-tests (issue 16): which of an annotator's items come back, and when.

A study with ``retest_share`` > 0 shows a share of each annotator's items a second time,
``retest_after`` of their votes later, with the two sides swapped. Which items is
deterministic from (study, annotator, seed, item key), like the schedule. The re-test
vote is stored in the vote table like any other, with ``retest_of`` naming the vote it
repeats; it never enters the ``current_vote`` view, so the fits count each item once.

Standard library only (the voting path must not import NumPy).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

RESOLUTION = 1_000_000
"""The selection draws a whole number below this; a share is exact to 1e-6."""


def selected(study: str, annotator: str, seed: int, item_key: str, share: float) -> bool:
    """Whether this annotator's vote on the item is re-tested (a share ``share`` of items).

    Examples
    --------
    >>> selected("s", "ann", 0, "p1", 0.0), selected("s", "ann", 0, "p1", 1.0)
    (False, True)
    """
    digest = hashlib.sha256(
        "\x1f".join(("retest", study, annotator, str(seed), item_key)).encode()
    ).digest()
    return int.from_bytes(digest[:8], "little") % RESOLUTION < share * RESOLUTION


@dataclass(frozen=True)
class RetestDue:
    """An item whose re-test is pending for the annotator."""

    item_id: int
    key: str
    original: str
    """uuid of the annotator's current vote on the item (what the re-test repeats)."""
    swapped: bool
    """The sides of the original showing: the re-test shows the other way round."""
    later: int
    """How many of the annotator's current votes were cast after the original."""


def pending(
    votes: Sequence[tuple[int, str, str, bool]],
    retested: set[int],
    *,
    study: str,
    annotator: str,
    seed: int,
    share: float,
) -> list[RetestDue]:
    """The annotator's pending re-tests, oldest original first.

    ``votes`` are the annotator's current votes ``(item_id, key, uuid, swapped)`` in the
    order they were cast; ``retested`` the items that already hold a re-test vote.

    Examples
    --------
    >>> votes = [(1, "p1", "u1", False), (2, "p2", "u2", True), (3, "p3", "u3", False)]
    >>> [(d.key, d.later) for d in pending(votes, {2}, study="s", annotator="a", seed=0,
    ...                                    share=1.0)]
    [('p1', 2), ('p3', 0)]
    """
    if share <= 0:
        return []
    n = len(votes)
    return [
        RetestDue(item, key, uuid, swapped, n - 1 - pos)
        for pos, (item, key, uuid, swapped) in enumerate(votes)
        if item not in retested and selected(study, annotator, seed, key, share)
    ]


def after_vote(
    waiting: Sequence[RetestDue],
    vote: tuple[int, str, str, bool],
    chosen: Callable[[str], bool],
) -> list[RetestDue]:
    """The pending re-tests after the annotator's vote ``(item_id, key, uuid, swapped)``:
    each one vote further from its original, and the voted item added when ``chosen``
    selects its key (replacing an earlier entry of the same item).

    Examples
    --------
    >>> w = after_vote([], (1, "p1", "u1", False), lambda key: True)
    >>> [(d.key, d.later) for d in after_vote(w, (2, "p2", "u2", True), lambda key: False)]
    [('p1', 1)]
    """
    item, key, uuid, swapped = vote
    out = [replace(d, later=d.later + 1) for d in waiting if d.item_id != item]
    if chosen(key):
        out.append(RetestDue(item, key, uuid, swapped, 0))
    return out


def due(waiting: Sequence[RetestDue], after: int, *, queue_empty: bool) -> RetestDue | None:
    """The re-test to show now: the oldest with at least ``after`` votes since its
    original, or the oldest at all once the annotator has no other item left."""
    for d in waiting:
        if queue_empty or d.later >= after:
            return d
    return None
