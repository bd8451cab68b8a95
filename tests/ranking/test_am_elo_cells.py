"""am-ELO from vote cells (ranking.pairwise._am_elo_cells), the fit stable_arena runs on the
(annotator, outcome, model_a, model_b) counts it already holds (ranking.arena._VoteCells).

The reference is the public per-vote :func:`ranking.am_elo` on the same votes: the cells
give the fit the same (pair, annotator) triples and pair totals (sums of integers and
halves, exact in any order), so every number must agree to 1e-12 relative (in fact bit for
bit below ``_TRIPLES_SORT_MIN`` votes), and every failure must be the same error with the
same message. Random small studies are drawn by hypothesis.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ranking.arena import _VoteCells
from ranking.errors import ConvergenceError, RankingInputError
from ranking.pairwise import (
    _aggregate_pairs,
    _aggregate_triples,
    _am_elo_cells,
    _AmCells,
    am_elo,
)


@st.composite
def studies(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    n = draw(st.integers(2, 6))
    m = draw(st.integers(1, 7))
    size = draw(st.integers(1, 150))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    k = rng.integers(0, m, size)
    p = draw(st.sampled_from([(0.4, 0.2, 0.4), (0.45, 0.1, 0.45), (0.7, 0.1, 0.2), (0, 1, 0)]))
    w = rng.choice([0.0, 0.5, 1.0], size, p=p)
    return a, b, k, w, np.array([n, m])


def _counts(a, b, k, w, n: int, m: int) -> np.ndarray:
    cells = _VoteCells.of(a, b, w, k, n, m)
    assert cells is not None
    return cells.counts


OPTS = {"ability_prior_sd": 2.0, "rating_prior_sd": 1000.0, "information": "observed"}


@settings(max_examples=200, deadline=None)
@given(studies(), st.booleans())
def test_cell_fit_equals_the_per_vote_fit(v, warm) -> None:
    """Expected: ``am_elo`` on the votes (the public, per-vote fit): ratings, abilities,
    discriminations, standard errors, covariance and log-likelihood to 1e-12 relative,
    the same iterations and counts; or the same error, with the same message."""
    a, b, k, w, (n, m) = v
    n, m = int(n), int(m)
    init = None
    if warm:
        init = (np.linspace(0.5, -0.5, n), np.linspace(1.5, 0.5, m))
    failed: Exception | None = None
    try:
        ref = am_elo(a, b, k, w, n_models=n, n_annotators=m, init=init, **OPTS)
    except (RankingInputError, ConvergenceError) as err:
        failed = err
    if failed is not None:
        with pytest.raises(type(failed)) as got_err:
            _am_elo_cells(_counts(a, b, k, w, n, m), init=init, **OPTS)
        assert str(got_err.value) == str(failed)
        return
    got = _am_elo_cells(_counts(a, b, k, w, n, m), init=init, **OPTS)
    for name in (
        "ratings",
        "abilities",
        "discriminations",
        "rating_standard_errors",
        "ability_standard_errors",
        "lower",
        "upper",
        "rating_covariance",
    ):
        np.testing.assert_allclose(
            getattr(got, name), getattr(ref, name), rtol=1e-12, atol=0, err_msg=name
        )
    assert got.log_likelihood == pytest.approx(ref.log_likelihood, rel=1e-12)
    assert got.iterations == ref.iterations
    np.testing.assert_array_equal(got.n_records, ref.n_records)
    np.testing.assert_array_equal(got.ranks, ref.ranks)
    assert got.n_battles == ref.n_battles == a.size
    assert (got.both_bad_as, got.ability_prior_sd) == (ref.both_bad_as, ref.ability_prior_sd)


@settings(max_examples=150, deadline=None)
@given(studies())
def test_cell_triples_are_the_aggregated_votes(v) -> None:
    """Expected: ``_aggregate_triples`` and ``_aggregate_pairs`` of the votes (the per-vote
    aggregation, sorted by (pair, annotator)): the same arrays, exactly, in the same order."""
    a, b, k, w, (n, m) = v
    n, m = int(n), int(m)
    if not (np.bincount(a, minlength=n) + np.bincount(b, minlength=n)).all():
        return  # a model without votes: _AmCells raises (checked above)
    data = _AmCells(_counts(a, b, k, w, n, m))
    ref = _aggregate_triples(a, b, k, w, n, m)
    got = data.triples()
    for name in ("ann", "pair", "pair_lo", "pair_hi", "wins", "cnt", "lo_ann", "hi_ann", "wm"):
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)
    for g, r in zip(data.pairs, _aggregate_pairs(a, b, w, n), strict=True):
        np.testing.assert_array_equal(g, r)
    np.testing.assert_array_equal(data.n_records(), np.bincount(k, minlength=m))


def test_cell_fit_on_a_simulated_arena_is_bit_for_bit_the_vote_fit() -> None:
    """Expected: ``am_elo`` on 20,000 simulated votes (8 models, 40 annotators, 3 of them
    flipped), bit for bit: the same triples, so the same floating-point operations."""
    from ranking.simulation import perturb_outcomes, simulate_arena

    sim = simulate_arena(n_models=8, n_annotators=40, records_per_annotator=500, rng=3)
    w = perturb_outcomes(sim.outcome, sim.annotator, [0, 1, 2], strategy="flip")
    a, b, k = sim.model_a, sim.model_b, sim.annotator
    ref = am_elo(a, b, k, w, n_models=8, n_annotators=40, **OPTS)
    got = _am_elo_cells(_counts(a, b, k, w, 8, 40), **OPTS)
    np.testing.assert_array_equal(got.ratings, ref.ratings)
    np.testing.assert_array_equal(got.abilities, ref.abilities)
    np.testing.assert_array_equal(got.rating_covariance, ref.rating_covariance)
    np.testing.assert_array_equal(got.ability_standard_errors, ref.ability_standard_errors)
