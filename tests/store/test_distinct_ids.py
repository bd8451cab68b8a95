"""``repo._distinct_ids`` (the parents check of a large vote import) is ``numpy.unique``."""

from __future__ import annotations

import numpy as np
import pytest

from annotate.store import repo


@pytest.mark.parametrize(
    "ids",
    [
        [],
        [0],
        [5, 5, 5],
        [3, 1, 2, 3, 1],
        [1, 10**12, 7],  # far beyond the table of flags: numpy.unique
        [-4, 2, -4, 0],  # below zero: numpy.unique
    ],
)
def test_distinct_ids_is_numpy_unique(ids: list[int]) -> None:
    a = np.asarray(ids, dtype=np.int64)
    got = repo._distinct_ids(a)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.unique(a))


def test_distinct_ids_of_a_million_votes_is_numpy_unique() -> None:
    rng = np.random.default_rng(13)
    for high in (10, 10_000, 3_000_000):
        a = rng.integers(1, high, size=1_000_000, dtype=np.int64)
        assert np.array_equal(repo._distinct_ids(a), np.unique(a))
