"""Warm starts of am-ELO (``am_elo(init=...)``), of ``stable_arena(init=...)`` and of
``stable_arena_components(warm_starts=...)`` (issue 13: the monitor refits from its
previous solution).

The reference is the same fit started cold, from m-ELO (itself checked against other
libraries and closed forms in ``test_pairwise.py`` and ``test_arena.py``). A fit stops
once its Newton decrement ``g' H^-1 g`` is at most ``tol``; for the quadratic model of
the log-likelihood ``|x_i - x*_i| <= sqrt(g' H^-1 g) sqrt((H^-1)_ii)``, so every fit
lies within ``sqrt(tol)`` standard errors of the optimum whatever its start, and two
fits within ``2 sqrt(tol)`` (:data:`WARM_SE`): the tolerance of these comparisons.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ranking.arena import stable_arena
from ranking.components import ComponentFit, stable_arena_components
from ranking.errors import InvalidParameterError, ShapeError
from ranking.pairwise import AmEloResult, am_elo
from ranking.simulation import perturb_outcomes, simulate_arena

TOL = 1e-10
"""am_elo's default tolerance on the Newton decrement (also stable_arena's)."""
WARM_SE = 2.0 * math.sqrt(TOL)
"""Two fits of the same optimum agree to this many standard errors (module docstring)."""

PENALISED = {"ability_prior_sd": 2.0, "rating_prior_sd": 1000.0, "information": "observed"}
"""The settings of stable_arena's fits."""


@pytest.fixture(scope="module")
def battles() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    sim = simulate_arena(n_models=12, n_annotators=30, records_per_annotator=150, rng=7)
    w = perturb_outcomes(sim.outcome, sim.annotator, [0, 1], strategy="flip")
    return sim.model_a, sim.model_b, sim.annotator, np.asarray(w, dtype=np.float64)


def _assert_same_fit(w: AmEloResult, c: AmEloResult) -> None:
    """Ratings and abilities within WARM_SE standard errors (plus rounding); the standard
    errors, which move with the estimates, to a relative 1e-4; the ranks exactly."""
    tol_r = WARM_SE * c.rating_standard_errors + 1e-9
    np.testing.assert_array_less(np.abs(w.ratings - c.ratings), tol_r)
    tol_a = WARM_SE * c.ability_standard_errors + 1e-12
    np.testing.assert_array_less(np.abs(w.abilities - c.abilities), tol_a)
    np.testing.assert_allclose(w.rating_standard_errors, c.rating_standard_errors, rtol=1e-4)
    np.testing.assert_array_equal(w.ranks, c.ranks)


@pytest.mark.parametrize("settings", [{}, PENALISED], ids=["ml", "penalised"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_any_start_converges_to_the_cold_solution(
    battles: tuple[np.ndarray, ...], settings: dict[str, object], seed: int
) -> None:
    a, b, k, w = battles
    cold = am_elo(a, b, k, w, **settings)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    start = (rng.normal(0.0, 2.0, 12), rng.uniform(0.05, 4.0, 30))
    warm = am_elo(a, b, k, w, init=start, **settings)  # type: ignore[arg-type]
    _assert_same_fit(warm, cold)
    assert warm.tol == cold.tol == TOL


@pytest.mark.parametrize("settings", [{}, PENALISED], ids=["ml", "penalised"])
def test_a_start_at_the_solution_needs_one_step(
    battles: tuple[np.ndarray, ...], settings: dict[str, object]
) -> None:
    a, b, k, w = battles
    cold = am_elo(a, b, k, w, **settings)  # type: ignore[arg-type]
    warm = am_elo(a, b, k, w, init=cold, **settings)  # type: ignore[arg-type]
    assert warm.iterations == 1 < cold.iterations
    _assert_same_fit(warm, cold)
    # the pair of arrays is the same start; any positive scale of the pair too (eq. 7)
    pair = am_elo(a, b, k, w, init=(cold.log_strengths / 3, cold.discriminations * 3), **settings)  # type: ignore[arg-type]
    assert pair.iterations == 1
    _assert_same_fit(pair, cold)


def test_a_few_more_votes_take_fewer_iterations(battles: tuple[np.ndarray, ...]) -> None:
    """The monitor's case: the previous solution, then ten more votes."""
    a, b, k, w = battles
    before = am_elo(a[:-10], b[:-10], k[:-10], w[:-10], **PENALISED)  # type: ignore[arg-type]
    cold = am_elo(a, b, k, w, **PENALISED)  # type: ignore[arg-type]
    warm = am_elo(a, b, k, w, init=before, **PENALISED)  # type: ignore[arg-type]
    assert warm.iterations < cold.iterations
    _assert_same_fit(warm, cold)


@pytest.mark.parametrize(
    ("init", "error", "match"),
    [
        ((np.zeros(11), np.ones(30)), ShapeError, r"log_strengths must have shape \(12,\)"),
        ((np.zeros(12), np.ones(29)), ShapeError, r"discriminations must have shape \(30,\)"),
        ((np.zeros((12, 1)), np.ones(30)), ShapeError, "got \\(12, 1\\)"),
        ((np.full(12, np.nan), np.ones(30)), InvalidParameterError, "must be finite"),
        ((np.zeros(12), -np.ones(30)), InvalidParameterError, "positive mean"),
        (np.zeros(12), InvalidParameterError, "init must be an AmEloResult or a pair"),
        ("warm", InvalidParameterError, "got str"),
    ],
    ids=["models", "annotators", "2-d", "nan", "negative", "one-array", "string"],
)
def test_a_bad_init_gives_one_clear_error(
    battles: tuple[np.ndarray, ...], init: object, error: type[Exception], match: str
) -> None:
    a, b, k, w = battles
    with pytest.raises(error, match=match):
        am_elo(a, b, k, w, init=init)  # type: ignore[arg-type]


def test_a_result_on_other_annotators_is_refused(battles: tuple[np.ndarray, ...]) -> None:
    a, b, k, w = battles
    sel = k < 29
    other = am_elo(a[sel], b[sel], k[sel], w[sel])
    with pytest.raises(ShapeError, match="same items and annotators"):
        am_elo(a, b, k, w, init=other)


def test_stable_arena_from_its_previous_result(battles: tuple[np.ndarray, ...]) -> None:
    a, b, k, w = battles
    before = stable_arena(a[:-5], b[:-5], k[:-5], w[:-5], n_models=12, n_annotators=30)
    cold = stable_arena(a, b, k, w, n_models=12, n_annotators=30)
    warm = stable_arena(a, b, k, w, n_models=12, n_annotators=30, init=before)
    assert warm.status == cold.status
    assert warm.reasons == cold.reasons
    assert [[f.reason for f in fl] for fl in warm.flags] == [
        [f.reason for f in fl] for fl in cold.flags
    ]
    assert warm.fit.iterations < cold.fit.iterations
    _assert_same_fit(warm.fit, cold.fit)
    np.testing.assert_array_equal(warm.fit_annotators, cold.fit_annotators)
    with pytest.raises(ShapeError, match="a warm start needs the same index"):
        stable_arena(a, b, k, w, n_models=12, n_annotators=31, init=cold)


def test_components_reuse_their_previous_fits(battles: tuple[np.ndarray, ...]) -> None:
    a, b, k, w = battles
    kw = {"n_items": 12, "n_annotators": 30}
    warm_starts: dict[int, ComponentFit] = {}
    stable_arena_components(a[:-5], b[:-5], k[:-5], w[:-5], warm_starts=warm_starts, **kw)  # type: ignore[arg-type]
    assert list(warm_starts) == [0]
    warm = stable_arena_components(a, b, k, w, warm_starts=warm_starts, **kw)  # type: ignore[arg-type]
    cold = stable_arena_components(a, b, k, w, **kw)  # type: ignore[arg-type]
    assert warm.status == cold.status
    wf, cf = warm.fits[0].result, cold.fits[0].result
    assert wf is not None
    assert cf is not None
    assert wf.fit.iterations < cf.fit.iterations
    _assert_same_fit(wf.fit, cf.fit)
    assert warm_starts[0] is warm.fits[0]
