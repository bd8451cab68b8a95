"""The ability step's start of am-ELO (``ranking.pairwise._am_elo_started``: one Newton step
on each annotator's discrimination before the joint iteration), used by the fits that
refit from scratch on every call (``stable_arena``'s preliminary and final fits,
``human_difficulty_scale``; issue 13).

The reference is :func:`ranking.am_elo` itself, started from m-ELO with equal abilities
(its values are checked against other libraries and closed forms in ``test_pairwise.py``):
both stop at a Newton decrement ``g' H^-1 g <= tol``, so each lies within ``sqrt(tol)``
standard errors of the optimum whatever its start and the two within ``2 sqrt(tol)``
(the argument of ``test_am_elo_init.py``, whose ``_assert_same_fit`` is the comparison
here); the ranks and every verdict are the same.
"""

from __future__ import annotations

import numpy as np
import pytest

from ranking import am_elo
from ranking.alignment import human_difficulty_scale
from ranking.arena import _VoteCells, stable_arena
from ranking.pairwise import (
    _ability_step,
    _am_elo_cells,
    _am_elo_estimates,
    _am_elo_fit,
    _am_elo_started,
    _am_eval,
    _AmVotes,
    _bt_newton,
    _Point,
    _Pool,
    _prepare_am,
    _Triples,
)
from ranking.simulation import perturb_outcomes, simulate_arena
from tests.ranking.test_am_elo_init import PENALISED, _assert_same_fit


def _arena(seed: int, flipped: tuple[int, ...] = (0, 1)) -> tuple[np.ndarray, ...]:
    sim = simulate_arena(n_models=12, n_annotators=30, records_per_annotator=150, rng=seed)
    w = perturb_outcomes(sim.outcome, sim.annotator, list(flipped), strategy="flip")
    return sim.model_a, sim.model_b, sim.annotator, np.asarray(w, dtype=np.float64)


def _spread(seed: int, n: int, m: int, size: int) -> tuple[np.ndarray, ...]:
    """Annotators of very unequal discrimination (log-normal, sd 1), some inverted."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 1.0, n)
    disc = rng.lognormal(0.0, 1.0, m) * np.where(rng.random(m) < 0.1, -1.0, 1.0)
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    k = np.arange(size) % m
    p = 1.0 / (1.0 + np.exp(-disc[k] * (s[a] - s[b])))
    u = rng.random(size)
    w = np.where(u < 0.1, 0.5, (u < 0.1 + 0.9 * p).astype(np.float64))
    return a, b, k, w


@pytest.mark.parametrize("settings", [{}, PENALISED], ids=["ml", "penalised"])
@pytest.mark.parametrize("seed", [3, 7, 11])
def test_the_same_optimum_as_am_elo(settings: dict[str, object], seed: int) -> None:
    a, b, k, w = _arena(seed)
    ref = am_elo(a, b, k, w, **settings)  # type: ignore[arg-type]
    fit = _am_elo_started(a, b, k, w, **settings)  # type: ignore[arg-type]
    _assert_same_fit(fit, ref)
    assert fit.log_likelihood == pytest.approx(ref.log_likelihood, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("settings", [{}, PENALISED], ids=["ml", "penalised"])
def test_fewer_iterations_where_abilities_spread(settings: dict[str, object]) -> None:
    """The start's purpose: abilities far from equal cost the joint iteration several
    steps from a = 1; one step per annotator first saves some (never adds any here)."""
    a, b, k, w = _spread(5, 15, 80, 24_000)
    ref = am_elo(a, b, k, w, **settings)  # type: ignore[arg-type]
    fit = _am_elo_started(a, b, k, w, **settings)  # type: ignore[arg-type]
    _assert_same_fit(fit, ref)
    assert fit.iterations < ref.iterations


def test_annotators_who_agree_need_no_more_iterations() -> None:
    """Where the annotators all vote alike (equal abilities are close to the optimum)
    the fit is still am_elo's to the tolerance, and no longer."""
    sim = simulate_arena(n_models=6, n_annotators=4, records_per_annotator=400, rng=2)
    a, b, k, w = sim.model_a, sim.model_b, sim.annotator, sim.outcome
    ref = am_elo(a, b, k, w)
    fit = _am_elo_started(a, b, k, w)
    _assert_same_fit(fit, ref)
    assert fit.iterations <= ref.iterations


def _step_inputs() -> tuple[_Triples, np.ndarray, np.ndarray, _Point, float, int]:
    a, b, k, w = _arena(12)
    data = _AmVotes(_prepare_am(a, b, k, w, None, None, None, "tie"))
    lo, hi, wins, cnt = data.pairs
    s, _, _ = _bt_newton(lo, hi, wins, cnt, data.n, tol=1e-10, max_iter=100)
    tr = data.triples()
    ones = np.ones(data.m)
    pt = _am_eval(tr, s, ones, _Pool(tr.pair.size))
    return tr, s, ones, pt, pt.loglik(), data.m


def test_the_step_is_kept_only_where_it_raises_the_likelihood() -> None:
    tr, s, ones, pt, ll, m = _step_inputs()
    # a likelihood no step can reach: the start is returned as it was
    out = _ability_step(tr, m, s, ones, pt, np.inf, None, 0.0)
    assert out[0] is s
    assert out[1] is ones
    assert out[2] is pt
    assert out[3] == np.inf
    # from the m-ELO start: kept, normalised by eq. 7, the point at the new estimates
    s2, a2, pt2, ll2 = _ability_step(tr, m, s, ones, pt, ll, None, 0.0)
    assert ll2 > ll
    assert pt2 is not pt
    assert a2.mean() == pytest.approx(1.0, abs=1e-12)
    assert s2.mean() == pytest.approx(0.0, abs=1e-12)
    eta = a2[tr.ann] * (s2[tr.lo] - s2[tr.hi])
    np.testing.assert_allclose(pt2.eta, eta, rtol=1e-12, atol=1e-12)
    assert pt2.loglik() == pytest.approx(ll2, rel=1e-12)
    # each step clipped to [-1, 1] from a = 1: no ability below 0, none above 2 / mean
    assert np.all(a2 >= 0.0)
    assert np.flatnonzero(a2 < 0.5).tolist() == [0, 1]  # the two flipped annotators


def test_estimates_and_cells_are_the_started_fit_bit_for_bit() -> None:
    """The preliminary fit (_am_elo_estimates) and the cell fit (_am_elo_cells) with the
    start are _am_elo_started's fit, bit for bit (the same arrays, the same iteration)."""
    a, b, k, w = _arena(4)
    full = _am_elo_started(a, b, k, w)
    est = _am_elo_estimates(a, b, k, w, ability_start=True)
    for field in ("ratings", "abilities", "discriminations", "n_records"):
        assert np.array_equal(getattr(est, field), getattr(full, field)), field
    assert est.iterations == full.iterations
    pen = _am_elo_started(a, b, k, w, **PENALISED)  # type: ignore[arg-type]
    cells = _VoteCells.of(a, b, w, k, 12, 30)
    assert cells is not None
    from_cells = _am_elo_cells(cells.counts, ability_start=True, **PENALISED)  # type: ignore[arg-type]
    for field in ("ratings", "abilities", "rating_standard_errors", "ability_standard_errors"):
        assert np.array_equal(getattr(from_cells, field), getattr(pen, field)), field
    assert from_cells.iterations == pen.iterations


def test_without_the_option_the_fit_is_am_elo_bit_for_bit() -> None:
    a, b, k, w = _arena(6)
    ref = am_elo(a, b, k, w, **PENALISED)  # type: ignore[arg-type]
    d = _prepare_am(a, b, k, w, None, None, None, "tie")
    fit = _am_elo_fit(
        _AmVotes(d),
        initial=1000.0,
        confidence=0.95,
        tol=1e-10,
        max_iter=200,
        both_bad_as="tie",
        ability_prior_sd=2.0,
        rating_prior_sd=1000.0,
        information="observed",
        init=None,
    )
    assert np.array_equal(fit.ratings, ref.ratings)
    assert np.array_equal(fit.abilities, ref.abilities)
    assert fit.iterations == ref.iterations


def test_stable_arena_verdicts_are_unchanged() -> None:
    """stable_arena's fits start this way: the verdicts are those of fits started from
    a = 1 (rerun here through am_elo with the same settings and the same votes)."""
    a, b, k, w = _arena(8, flipped=(0, 1, 2))
    res = stable_arena(a, b, k, w, delta=20)
    ref = am_elo(a, b, k, w, n_models=12, n_annotators=30, **PENALISED)  # type: ignore[arg-type]
    _assert_same_fit(res.fit, ref)  # every annotator fitted, the fit not mirrored
    assert res.status[:3] == ("flagged", "flagged", "flagged")
    assert all(s == "reliable" for s in res.status[3:])


def test_human_scale_is_am_elos_to_the_tolerance() -> None:
    """human_difficulty_scale fits am-ELO from this start: am_elo on the same votes
    (question a "wins" when voted harder) agrees to the fit's tolerance."""
    rng = np.random.default_rng(9)
    n_q, n_a = 10, 12
    pairs = np.array([(i, j) for i in range(n_q) for j in range(i + 1, n_q)])
    hard = rng.normal(0.0, 1.0, n_q)
    disc = rng.lognormal(0.0, 0.7, n_a)
    pair = np.tile(np.arange(len(pairs)), n_a)
    ann = np.repeat(np.arange(n_a), len(pairs))
    p = 1.0 / (1.0 + np.exp(-disc[ann] * (hard[pairs[pair, 0]] - hard[pairs[pair, 1]])))
    vote = np.where(rng.random(pair.size) < p, 1, 2)
    res = human_difficulty_scale(pairs, pair, ann, vote, virtual_ties=0)
    ref = am_elo(pairs[pair, 0], pairs[pair, 1], ann, (vote == 1).astype(float), initial=0.0)
    tol = 2e-5 * ref.rating_standard_errors + 1e-9
    np.testing.assert_array_less(np.abs(res.difficulty.data - ref.ratings), tol)
    np.testing.assert_allclose(res.reliability.data, ref.discriminations, rtol=1e-6)
