"""The agreement functions that read a C-contiguous float64 ratings array without copying
it (``_as_ratings(..., reuse=True)``, session 14) against the copy they made before: the
same input given as nested lists (always converted into a new array, as before) and as a
Fortran-ordered and a strided array (copied, as before) gives the same result bit for bit,
and the caller's array is left as it was."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ranking._agreement_point import _as_ratings
from ranking.agreement import (
    agreement_bootstrap,
    fleiss_kappa_complete,
    leave_one_out_agreement,
    pairwise_cohen_matrix,
    rating_counts,
)
from tests.ranking.bits import bits


def _calls(with_skips: bool):
    labels = [1.0, 2.0]
    calls = [
        lambda r: pairwise_cohen_matrix(r, labels=labels),
        lambda r: leave_one_out_agreement(r, labels=labels),
        lambda r: fleiss_kappa_complete(r, labels=labels),
    ]
    if with_skips:
        calls += [
            lambda r: rating_counts(r, labels=[0.0, 1.0, 2.0]),
            lambda r: agreement_bootstrap(
                r,
                n_boot=7,
                rng=3,
                labels=labels,
                abstain=0.0,
                resample=("units", "annotators", "both"),
            ),
        ]
    else:
        calls.append(lambda r: rating_counts(r, labels=labels))
    return calls


@st.composite
def _ratings(draw):
    n_r, n_u = draw(st.integers(2, 7)), draw(st.integers(2, 9))
    with_skips = draw(st.booleans())
    codes = [np.nan, 1.0, 2.0, *([0.0] if with_skips else [])]
    cells = draw(st.lists(st.sampled_from(codes), min_size=n_r * n_u, max_size=n_r * n_u))
    return np.array(cells, dtype=np.float64).reshape(n_r, n_u), with_skips


@settings(max_examples=120, deadline=None)
@given(_ratings())
def test_reused_ratings_as_copied(case):
    r, with_skips = case
    before = r.tobytes()
    for call in _calls(with_skips):
        try:
            want = bits(call(r.tolist()))  # a new array, as every call made before
        except Exception as err:  # the same error either way
            want = ("raises", type(err).__name__, str(err))
        for given_as in (r, np.asfortranarray(r), np.repeat(r, 2, axis=1)[:, ::2]):
            try:
                got = bits(call(given_as))
            except Exception as err:
                got = ("raises", type(err).__name__, str(err))
            assert got == want
        assert r.tobytes() == before  # only read


def test_as_ratings_reuse():
    c = np.array([[1.0, np.nan], [2.0, 1.0]])
    assert _as_ratings(c, "r", reuse=True) is c
    f = np.asfortranarray(c)
    got = _as_ratings(f, "r", reuse=True)
    assert got is not f  # copied as by default (in the same layout)
    assert bits(got) == bits(f.astype(np.float64))
    i = np.array([[1, 2], [2, 1]])
    assert _as_ratings(i, "r", reuse=True).dtype == np.float64
    assert _as_ratings(c, "r") is not c  # the default still copies


@settings(max_examples=60, deadline=None)
@given(_ratings())
def test_bootstrap_indicators_as_stacked(case):
    """With ``abstain``, agreement_bootstrap's label indicators F are planes 1..K of the
    array with the abstentions' plane (session 14): the same bytes and layout as
    ``_indicators``' stack it made before."""
    import ranking._agreement_resampling as ar

    r, _ = case
    seen = []
    real = ar._RaterDesign

    def capture(F):
        seen.append(F)
        return real(F)

    ar._RaterDesign = capture
    try:
        agreement_bootstrap(r, n_boot=3, rng=0, labels=[1.0, 2.0], abstain=0.0)
    finally:
        ar._RaterDesign = real
    if not seen:  # no replicate drawn (nothing to resample)
        return
    judged = np.where(r == 0.0, np.nan, r)
    want = ar._indicators(judged, np.array([1.0, 2.0]))
    got = seen[0]
    assert got.flags.c_contiguous
    assert bits(got) == bits(want)
