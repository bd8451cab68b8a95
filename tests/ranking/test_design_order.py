"""ranking.design.order_battles (issue 16 item 1, arena part): which battles to show first.

Properties checked by brute force on the returned order: coverage (every model pair before
any second battle of a pair), balance (at equal ratings, pair counts in every prefix differ
by at most one; the first M/2 battles of a round robin show every model once), allocation
in proportion to the Bradley-Terry information 4 p (1 - p) once every pair is covered, and
determinism from the seed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ranking.design import order_battles
from ranking.errors import RankingInputError
from ranking.pairwise import ELO_C


def round_robin(m: int, per_pair: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pairs = [
        (i, j) if rng.random() < 0.5 else (j, i) for i, j in itertools.combinations(range(m), 2)
    ]
    a = np.array([p[0] for p in pairs for _ in range(per_pair)])
    b = np.array([p[1] for p in pairs for _ in range(per_pair)])
    perm = rng.permutation(a.size)
    return a[perm], b[perm]


def test_every_pair_first_then_balanced_at_equal_ratings() -> None:
    m = 6
    a, b = round_robin(m, 5)
    o = order_battles(a, b, n_models=m, seed=3)
    assert sorted(o.order.tolist()) == list(range(a.size))
    assert o.pairs == 15
    key = [tuple(sorted((int(a[i]), int(b[i])))) for i in o.order]
    assert len(set(key[:15])) == 15  # every pair before any repeat
    counts: dict[tuple[int, int], int] = dict.fromkeys(set(key), 0)
    for k in key:
        counts[k] += 1
        assert max(counts.values()) - min(counts.values()) <= 1
    first = key[: m // 2]  # a perfect matching: every model shown once
    assert sorted(x for p in first for x in p) == list(range(m))
    assert o.round.tolist() == [i // 15 for i in range(a.size)]


def test_deterministic_from_the_seed() -> None:
    a, b = round_robin(5, 3)
    x = order_battles(a, b, n_models=5, seed=7).order
    assert np.array_equal(x, order_battles(a, b, n_models=5, seed=7).order)
    assert not np.array_equal(x, order_battles(a, b, n_models=5, seed=8).order)


def test_after_coverage_pairs_come_in_proportion_to_their_information() -> None:
    m = 4
    a, b = round_robin(m, 200)
    ratings = np.array([0.0, 0.0, 400.0, 800.0])
    o = order_battles(a, b, n_models=m, ratings=ratings, seed=1)
    head = o.order[:300]
    key = [tuple(sorted((int(a[i]), int(b[i])))) for i in head]
    assert len(set(key[:6])) == 6
    counts = {k: key.count(k) for k in set(key)}
    w = {}
    for i, j in counts:
        p = 1 / (1 + np.exp(-ELO_C * (ratings[i] - ratings[j])))
        w[(i, j)] = 4 * p * (1 - p)
    total_w = sum(w.values())
    for k, c in counts.items():
        assert c == pytest.approx(300 * w[k] / total_w, abs=1.5)
    assert counts[(0, 1)] > counts[(0, 3)]


def test_bad_input_is_refused() -> None:
    with pytest.raises(RankingInputError):
        order_battles([0, 1], [1], n_models=2)
    with pytest.raises(RankingInputError):
        order_battles([0], [0], n_models=2)
    with pytest.raises(RankingInputError):
        order_battles([0], [2], n_models=2)
    with pytest.raises(RankingInputError):
        order_battles([0], [1], n_models=2, ratings=[0.0])
    assert order_battles([], [], n_models=3).order.size == 0
