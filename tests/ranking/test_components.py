"""Tests for ranking.components (Stable Arena per connected component).

The reference is :func:`ranking.arena.stable_arena` run by hand on each component's
votes, re-indexed, with the capped dynamic delta; the merge rule is checked against
its statement.
"""

from __future__ import annotations

import numpy as np
import pytest

from ranking.arena import dynamic_delta, stable_arena
from ranking.components import DeltaCache, stable_arena_components
from ranking.errors import InvalidParameterError, LengthMismatchError
from ranking.simulation import simulate_arena
from ranking.types import FloatArray, IntArray


def two_arenas() -> tuple[IntArray, IntArray, IntArray, FloatArray, int, int]:
    """Models 0-5 and 6-11, never compared with each other; the same 8 annotators."""
    parts = []
    for seed, offset in ((1, 0), (2, 6)):
        sim = simulate_arena(n_models=6, n_annotators=8, records_per_annotator=60, rng=seed)
        parts.append((sim.model_a + offset, sim.model_b + offset, sim.annotator, sim.outcome))
    a, b, k, w = (np.concatenate(x) for x in zip(*parts, strict=True))
    return a, b, k, w, 12, 8


def test_each_component_is_stable_arena_on_its_own_votes() -> None:
    a, b, k, w, n, m = two_arenas()
    res = stable_arena_components(a, b, k, w, n_items=n, n_annotators=m)
    assert res.n_components == 2
    assert res.component.tolist() == [0] * 6 + [1] * 6
    for g, cf in enumerate(res.fits):
        sel = res.vote_component == g
        np.testing.assert_array_equal(cf.members, np.arange(6) + 6 * g)
        la, lb = a[sel] - 6 * g, b[sel] - 6 * g
        cnt = np.bincount(k[sel], minlength=m)
        cap = int(np.floor(np.median(cnt[cnt > 0]))) - 1
        rule = dynamic_delta(la, lb, w[sel], annotator=k[sel], n_models=6)
        ref = stable_arena(la, lb, k[sel], w[sel], n_models=6, n_annotators=m, delta=min(rule, cap))
        assert cf.result is not None
        assert cf.error is None
        assert cf.delta_rule == rule
        np.testing.assert_allclose(cf.result.ratings, ref.ratings, rtol=1e-12)
        assert cf.result.status == ref.status
        np.testing.assert_array_equal(cf.votes, cnt)
        np.testing.assert_array_equal(cf.comparisons, np.bincount(np.r_[la, lb], minlength=6))


def test_home_follows_the_merge_rule() -> None:
    a, b, k, w, n, m = two_arenas()
    res = stable_arena_components(a, b, k, w, n_items=n, n_annotators=m)
    for j in range(m):
        cands = [g for g, f in enumerate(res.fits) if f.result is not None and f.votes[j] > 0]
        severity = {"flagged": 0, "reliable": 1, "pending": 2}
        best = min(
            cands,
            key=lambda g: (
                severity[res.fits[g].result.status[j]],  # type: ignore[union-attr]
                -int(res.fits[g].votes[j]),
                g,
            ),
        )
        assert res.home[j] == best
        assert res.status[j] == res.fits[best].result.status[j]  # type: ignore[union-attr]


def test_one_component_matches_stable_arena() -> None:
    sim = simulate_arena(n_models=8, n_annotators=10, records_per_annotator=50, rng=3)
    res = stable_arena_components(
        sim.model_a, sim.model_b, sim.annotator, sim.outcome, n_items=8, n_annotators=10
    )
    assert res.n_components == 1
    assert res.home.tolist() == [0] * 10


def test_delta_caches_are_keyed_by_the_smallest_item_and_reused() -> None:
    a, b, k, w, n, m = two_arenas()
    caches: dict[int, DeltaCache] = {}
    first = stable_arena_components(a, b, k, w, n_items=n, n_annotators=m, delta_caches=caches)
    assert sorted(caches) == [0, 6]
    assert [f.delta_at_votes for f in first.fits] == [caches[0].at_votes, caches[6].at_votes]
    again = stable_arena_components(a, b, k, w, n_items=n, n_annotators=m, delta_caches=caches)
    for f1, f2 in zip(first.fits, again.fits, strict=True):
        assert f1.result is not None
        assert f2.result is not None
        np.testing.assert_allclose(f1.result.ratings, f2.result.ratings)


def test_a_component_that_cannot_be_fitted_is_recorded() -> None:
    a, b, k, w, _, m = two_arenas()
    # one more component (items 12, 13) judged by a single annotator who always votes tie
    a2, b2 = np.r_[a, [12, 12, 13]], np.r_[b, [13, 13, 12]]
    k2, w2 = np.r_[k, [0, 0, 0]], np.r_[w, [0.5, 0.5, 0.5]]
    res = stable_arena_components(a2, b2, k2, w2, n_items=14, n_annotators=m)
    assert res.n_components == 3
    bad = res.fits[2]
    assert bad.result is None
    assert bad.error is not None
    assert bad.members.tolist() == [12, 13]
    assert (res.home != 2).all()


def test_malformed_input_raises_named_errors() -> None:
    with pytest.raises(LengthMismatchError):
        stable_arena_components([0], [1, 0], [0], [1.0], n_items=2, n_annotators=1)
    with pytest.raises(InvalidParameterError):
        stable_arena_components([0], [2], [0], [1.0], n_items=2, n_annotators=1)
    with pytest.raises(InvalidParameterError, match="n_annotators"):
        stable_arena_components([0], [1], [0], [1.0], n_items=2, n_annotators=-1)
    with pytest.raises(LengthMismatchError):
        stable_arena_components(
            [0], [1], [0], [1.0], n_items=2, n_annotators=1, both_bad=[True, False]
        )


def test_interleaved_components_get_their_votes_in_order() -> None:
    """Votes of the components interleaved (as they arrive in a study): each component's
    fit, with the per-vote signals, is stable_arena on its votes in their order (selected
    by a boolean mask here), bit for bit."""
    a, b, k, w, n, m = two_arenas()
    order = np.random.default_rng(3).permutation(a.size)
    a, b, k, w = a[order], b[order], k[order], w[order]
    rng = np.random.default_rng(4)
    left, fast = rng.random(a.size) < 0.5, rng.random(a.size) < 0.1
    res = stable_arena_components(
        a, b, k, w, n_items=n, n_annotators=m, left_chosen=left, fast=fast
    )
    for g, cf in enumerate(res.fits):
        sel = res.vote_component == g
        assert cf.result is not None
        assert cf.delta_rule is not None
        ref = stable_arena(
            a[sel] - 6 * g,
            b[sel] - 6 * g,
            k[sel],
            w[sel],
            n_models=6,
            n_annotators=m,
            delta=cf.result.delta,
            left_chosen=left[sel],
            fast=fast[sel],
        )
        np.testing.assert_array_equal(cf.result.ratings, ref.ratings)
        np.testing.assert_array_equal(cf.result.abilities, ref.abilities)
        assert cf.result.status == ref.status
        assert cf.result.reasons == ref.reasons
