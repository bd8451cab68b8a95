"""The ``random`` verdict's tie test (issue 10): does an annotator tie on the pairs far
apart in the ranking (``ranking.arena._tie_gap_z``)? A rank-sum test of the annotator's
ties against its decisive votes on the fitted gap, conditional on its own number of ties,
so that its null ("ties do not become more frequent with the gap") holds for honest
annotators whatever their tie propensity (Davidson's honest annotator ties *less* on far
pairs). The test is off by default (``ranking.arena._TIE_TEST``; it did not pay on
bench_flags' grid); the verdict tests here switch it on."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, kstest, mannwhitneyu, norm, rankdata

import ranking.arena as arena
from ranking.arena import _gap_cdf, _tie_gap_z, _VoteCells, stable_arena
from ranking.simulation import perturb_votes, simulate_arena


def test_gap_cdf_is_the_mid_rank_over_the_votes() -> None:
    """With weights (votes per pair) the mid-distribution function equals scipy's average
    ranks of the expanded values, ``(rank - 1/2) / N`` (equal values share a rank)."""
    gen = np.random.default_rng(0)
    vals = np.round(gen.random(30), 1)  # many equal values
    wts = gen.integers(0, 5, size=30).astype(np.float64)
    expanded = np.repeat(vals, wts.astype(np.int64))
    ref = (rankdata(expanded, method="average") - 0.5) / expanded.size
    got = np.repeat(_gap_cdf(vals, wts), wts.astype(np.int64))
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


def _one_annotator_votes(
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    n, votes = 8, 120
    ls = gen.normal(0.0, 1.0, n)
    a = gen.integers(0, n, votes)
    b = (a + gen.integers(1, n, votes)) % n
    w = gen.choice([0.0, 0.5, 1.0], size=votes, p=[0.35, 0.3, 0.35])
    return ls, a, b, w, np.zeros(votes, dtype=np.int64)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_annotator_statistic_is_the_mann_whitney_z(seed: int) -> None:
    """With one annotator the votes' gap ranks are its own, so the statistic is the
    Mann-Whitney / Wilcoxon rank-sum statistic of its ties against its decisive votes,
    normal approximation with the tie correction and no continuity correction: the
    reference is scipy.stats.mannwhitneyu(..., method="asymptotic",
    use_continuity=False), whose one-sided p-value is ``1 - Phi(z)``."""
    ls, a, b, w, k = _one_annotator_votes(seed)
    z = _tie_gap_z(ls, a, b, w, k, ls.size, 1, None)[0]
    gap = np.abs(ls[a] - ls[b])
    tie = w == 0.5
    ref = mannwhitneyu(
        gap[tie], gap[~tie], alternative="greater", method="asymptotic", use_continuity=False
    )
    assert norm.sf(z) == pytest.approx(ref.pvalue, rel=1e-9)


def test_cells_and_votes_give_the_same_statistic() -> None:
    """The vote-cell sums (few cells per vote) and the per-vote sums agree to rounding."""
    sim = simulate_arena(n_models=6, n_annotators=12, records_per_annotator=60, rng=4)
    a, b, w, k = sim.model_a, sim.model_b, sim.outcome, sim.annotator
    ls = np.log(np.linspace(0.5, 3.0, 6))
    cells = _VoteCells.of(a, b, w, k, 6, 12)
    assert cells is not None
    z_cells = _tie_gap_z(ls, a, b, w, k, 6, 12, cells)
    z_votes = _tie_gap_z(ls, a, b, w, k, 6, 12, None)
    np.testing.assert_allclose(z_cells, z_votes, rtol=1e-10, atol=1e-12)
    assert np.isfinite(z_votes).all()


def test_too_few_ties_are_not_tested() -> None:
    """Fewer than ``_TIE_MIN_VOTES`` ties (or decisive votes): NaN, not a p-value from a
    normal approximation to the rank sum of one or two ties."""
    ls, a, b, w, k = _one_annotator_votes(5)
    w = np.where(w == 0.5, 1.0, w)
    w[:4] = 0.5
    assert np.isnan(_tie_gap_z(ls, a, b, w, k, ls.size, 1, None)[0])


@pytest.fixture
def tie_test_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arena, "_TIE_TEST", "union")


def _tie_p_values(
    n_studies: int, sd: float, flat: bool, votes: int = 100
) -> tuple[np.ndarray, int, int]:
    """The tie test's p-values of honest annotators over ``n_studies`` simulated studies of
    42 annotators, each with its own tie propensity uniform in [0.05, 0.5]; with ``flat``,
    annotators 0-13 instead tie at their propensity whatever the pair and otherwise pick a
    side at random (discrimination 0: the boundary of the null, where the p-value is
    uniform), and only theirs are returned. Also the honest annotators' false flags (all
    reasons) and their number."""
    ps: list[np.ndarray] = []
    ff = hon = 0
    for r in range(n_studies):
        gen = np.random.default_rng([71, r])
        rates = np.random.default_rng([72, r]).uniform(0.05, 0.5, 42)
        sim = simulate_arena(
            n_models=20,
            n_annotators=42,
            records_per_annotator=votes,
            discrimination_sd=sd,
            rng=gen,
            annotator_tie_rates=rates,
        )
        w = sim.outcome.copy()
        null = np.zeros(42, dtype=bool)
        if flat:
            null[:14] = True
            on = null[sim.annotator]
            u = gen.random(w.size)
            coin = (gen.random(w.size) < 0.5).astype(np.float64)
            w = np.where(on, np.where(u < rates[sim.annotator], 0.5, coin), w)
        res = stable_arena(sim.model_a, sim.model_b, sim.annotator, w, n_annotators=42)
        z = res.tie_statistics
        assert z is not None
        pick = null if flat else np.ones(42, dtype=bool)
        zz = z[pick]
        ps.append(norm.sf(zz[np.isfinite(zz)]))
        honest = ~null
        ff += int((np.asarray(res.status)[honest] == "flagged").sum())
        hon += int(honest.sum())
    return np.concatenate(ps), ff, hon


@pytest.mark.usefixtures("tie_test_on")
def test_flat_ties_give_uniform_p_values() -> None:
    """At the boundary of the null (ties as likely on far as on close pairs, any tie
    propensity from 0.05 to 0.5) the p-value is uniform: scipy's KS test against U(0, 1)
    does not reject (p > 0.01), over 14 annotators x 25 studies with their own tie rates
    (the gaps from the am-ELO fit of the other 28, honest, annotators)."""
    p, _, _ = _tie_p_values(25, 0.5, flat=True)
    assert p.size > 250
    assert kstest(p, "uniform").pvalue > 0.01


@pytest.mark.usefixtures("tie_test_on")
def test_honest_annotators_with_varied_tie_rates_are_not_flagged() -> None:
    """Honest annotators whose tie propensity varies from 0.05 to 0.5 (and discrimination
    lognormal, sd 1.0): their tie p-values are no smaller than uniform (honest annotators
    tie less on far pairs; one-sided KS, scipy.stats.kstest(alternative="greater") of
    ``P(p <= x) > x`` does not reject), at most 5% of them below 0.05 before any adjustment,
    and the share of honest annotators flagged for any reason has its exact (Clopper-Pearson)
    95% upper bound below 5%."""
    p, ff, hon = _tie_p_values(20, 1.0, flat=False)
    assert kstest(p, "uniform", alternative="greater").pvalue > 0.01
    assert float(np.mean(p <= 0.05)) <= 0.05
    assert binomtest(ff, hon).proportion_ci(method="exact").high < 0.05


@pytest.mark.usefixtures("tie_test_on")
def test_ties_on_far_pairs_are_flagged_random() -> None:
    """An annotator who ties exactly the pairs farthest apart in the true ranking and
    decides the close ones by the ranking (its decisive votes are honest, so its ability
    is not low) is flagged ``random`` by the tie test, with the tie statistic, threshold 0
    and a Benjamini-Hochberg-adjusted p-value as its evidence; JSON keeps the four keys."""
    sim = simulate_arena(n_models=12, n_annotators=20, records_per_annotator=120, rng=9)
    w = sim.outcome.copy()
    on = sim.annotator == 0
    gap = np.abs(sim.true_ratings[sim.model_a] - sim.true_ratings[sim.model_b])
    far = gap >= np.quantile(gap[on], 0.7)
    better = (sim.true_ratings[sim.model_a] > sim.true_ratings[sim.model_b]).astype(float)
    w[on] = np.where(far[on], 0.5, better[on])
    res = stable_arena(sim.model_a, sim.model_b, sim.annotator, w, n_annotators=20)
    assert res.status[0] == "flagged"
    (f,) = res.flags[0]
    assert (f.reason, f.test, f.threshold) == ("random", "ties", 0.0)
    assert res.tie_statistics is not None
    assert f.statistic == res.tie_statistics[0] > 3.0
    assert f.p_value is not None
    assert f.p_value <= 0.05
    assert set(f.as_dict()) == {"reason", "statistic", "threshold", "p_value"}
    assert "ties sit on pairs far apart" in res.reasons[0]


def test_tie_test_off_by_default_and_union_adds_only_its_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """By default (``_TIE_TEST = "off"``) the tie test does not run (``tie_statistics``
    all NaN, the rule before it); ``"union"`` adds its own flags and changes no other
    status; ``"fisher"`` runs (one family with the ability test) without tie flags."""
    sim = simulate_arena(n_annotators=20, records_per_annotator=60, rng=3)
    pv = perturb_votes(sim, [0, 1, 2], strategy="random", rng=3)
    args = (sim.model_a, sim.model_b, sim.annotator, pv.outcome)
    off = stable_arena(*args, n_annotators=20)
    assert off.tie_statistics is not None
    assert np.isnan(off.tie_statistics).all()
    monkeypatch.setattr(arena, "_TIE_TEST", "union")
    on = stable_arena(*args, n_annotators=20)
    assert on.tie_statistics is not None
    assert np.isfinite(on.tie_statistics).sum() > 10
    tie_flagged = {j for j, fl in enumerate(on.flags) if any(f.test == "ties" for f in fl)}
    for j in range(20):
        if j not in tie_flagged:
            assert on.status[j] == off.status[j]
    monkeypatch.setattr(arena, "_TIE_TEST", "fisher")
    fisher = stable_arena(*args, n_annotators=20)
    assert not any(f.test == "ties" for fl in fisher.flags for f in fl)


def test_per_annotator_tie_rates_keep_the_default_simulation() -> None:
    """``annotator_tie_rates`` draws nothing: all equal to ``tie_rate`` it reproduces the
    default simulation exactly (so bench_flags' studies are unchanged without it)."""
    base = simulate_arena(n_annotators=10, records_per_annotator=30, rng=5)
    same = simulate_arena(
        n_annotators=10, records_per_annotator=30, rng=5, annotator_tie_rates=np.full(10, 0.3)
    )
    np.testing.assert_array_equal(base.outcome, same.outcome)
    np.testing.assert_array_equal(base.model_a, same.model_a)
    varied = simulate_arena(
        n_annotators=10,
        records_per_annotator=400,
        rng=5,
        annotator_tie_rates=np.linspace(0.05, 0.6, 10),
    )
    share = np.bincount(varied.annotator, weights=varied.outcome == 0.5) / np.bincount(
        varied.annotator
    )
    assert share[0] < 0.08
    assert share[-1] > 0.4
