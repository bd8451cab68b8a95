"""Per-annotator order of items and sides: one mechanism for both study kinds.

The order and the side on which each item's two halves are shown are random
but deterministic from (study, annotator, seed), so an annotator who resumes
gets the same remaining order. Sides are drawn per (item, annotator), so each
item is shown first about half of the time across annotators. When a study
caps how many annotators judge each item (``overlap``), the queue prefers the
items with the fewest judgments so far.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from annotate.store.rows import ItemLoad
from annotate.study_settings import takes_votes


def _seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def swapped(study: str, annotator: str, seed: int, item_key: str) -> bool:
    """Whether the item's second half is shown first (left or top) to this annotator."""
    return bool(_seed("side", study, annotator, seed, item_key) & 1)


def base_order(study: str, annotator: str, seed: int, keys: Sequence[str]) -> list[int]:
    """A permutation of ``range(len(keys))``, deterministic from its arguments.

    Uses the standard library's Mersenne Twister (stable across Python
    versions for ``shuffle`` with an integer seed), so the app's cold start
    does not pay for importing NumPy.
    """
    rng = random.Random(_seed("order", study, annotator, seed))
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    rng.shuffle(order)
    return order


def queue(
    study: str,
    annotator: str,
    seed: int,
    items: Sequence[ItemLoad],
    *,
    done: set[int],
    excluded_subjects: set[str],
    overlap: int,
    file_order: bool = False,
) -> list[ItemLoad]:
    """The annotator's remaining items, in the order they will be shown.

    Items already voted on (``done``), in an excluded subject, or no longer taking
    votes (:func:`~annotate.study_settings.takes_votes`: judged ``overlap`` times, when
    ``overlap`` > 0) are left out. With a cap,
    items with fewer judgments come first; ties keep the annotator's own order.
    """
    # ``file_order``: ``items`` come in the study file's order (``item.position``)
    perm = (
        list(range(len(items)))
        if file_order
        else base_order(study, annotator, seed, [it.key for it in items])
    )
    rank = {items[i].item_id: r for r, i in enumerate(perm)}
    todo = [
        it
        for it in items
        if it.item_id not in done
        and it.subject not in excluded_subjects
        and takes_votes(overlap, it.votes)
    ]
    if overlap > 0:
        todo.sort(key=lambda it: (it.votes, rank[it.item_id]))
    else:
        todo.sort(key=lambda it: rank[it.item_id])
    return todo


def adaptive_draw_seed(study: str, annotator: str, seed: int, step: int) -> int:
    """The seed of an adaptive study's draw number ``step`` for this annotator.

    The adaptive schedule (:mod:`annotate.services.adaptive`) draws each next item with
    ``random.Random(adaptive_draw_seed(...))``: deterministic from (study, annotator,
    seed, step) and the votes stored, like the standard order.
    """
    return _seed("adaptive", study, annotator, seed, step)
