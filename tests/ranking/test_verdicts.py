"""Regression tests for issue 10: annotator verdicts a study lead can act on.

Expected values come from the cases of the issue (a pure against-voter, 12 of 12 left
choices, a 3 x 12 pilot), from independent references (a slow Holm/Benjamini-Hochberg,
statsmodels' ``multipletests``, scipy's ``binomtest``, finite differences of the
penalised log-likelihood) and from seeded simulations of honest annotators.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import expit, log_expit
from scipy.stats import binomtest

from ranking.arena import FLAG_REASONS, FlagReason, stable_arena
from ranking.errors import ConvergenceError, DegenerateDataError, InvalidParameterError
from ranking.pairwise import ELO_C, am_elo
from ranking.reliability import adjust_p_values
from ranking.simulation import perturb_votes, simulate_arena


@pytest.fixture(scope="module")
def sim():
    return simulate_arena(n_models=10, n_annotators=12, records_per_annotator=80, rng=11)


def _with_extra_annotator(sim, n_votes, rule, seed=0):
    """Append one annotator (index n_annotators) whose outcome is rule(true_a, true_b)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, sim.n_models, n_votes)
    b = (a + rng.integers(1, sim.n_models, n_votes)) % sim.n_models
    w = rule(sim.true_ratings[a], sim.true_ratings[b]).astype(float)
    k = np.full(n_votes, sim.n_annotators)
    return (
        np.concatenate([sim.model_a, a]),
        np.concatenate([sim.model_b, b]),
        np.concatenate([sim.annotator, k]),
        np.concatenate([sim.outcome, w]),
    )


def test_pure_against_voter_is_flagged_adversarial(sim):
    """Issue: an annotator who votes against the ranking every time (never a tie) stayed
    pending forever. Expected: flagged adversarial with an adjusted p-value <= 0.05."""
    a, b, k, w = _with_extra_annotator(sim, 60, lambda ra, rb: ra < rb)
    res = stable_arena(a, b, k, w)
    j = sim.n_annotators
    assert res.status[j] == "flagged"
    reasons = {f.reason for f in res.flags[j]}
    assert "adversarial" in reasons
    adv = next(f for f in res.flags[j] if f.reason == "adversarial")
    assert adv.statistic < 0
    assert adv.threshold == 0.0
    assert adv.p_value is not None
    assert adv.p_value <= 0.05
    assert res.votes_to_verdict[j] is None
    assert np.isfinite(res.abilities[j])


def test_pure_agreement_is_reliable(sim):
    """An annotator who always agrees with the true ranking has no finite MLE; with the prior
    it gets a finite ability and the verdict reliable."""
    a, b, k, w = _with_extra_annotator(sim, 60, lambda ra, rb: ra > rb)
    res = stable_arena(a, b, k, w)
    j = sim.n_annotators
    assert res.status[j] == "reliable"
    assert np.isfinite(res.abilities[j])
    assert res.abilities[j] > 0
    assert res.flags[j] == ()
    assert res.votes_to_verdict[j] is None


def test_twelve_of_twelve_left_is_position_bias_with_adjusted_p():
    """Issue: 12 of 12 left choices stayed pending. Expected: flagged position_bias, its
    p-value the Benjamini-Hochberg adjustment of the exact binomial p-values."""
    s = simulate_arena(n_models=6, n_annotators=3, records_per_annotator=12, tie_rate=0.0, rng=4)
    pv = perturb_votes(s, [0], strategy="position", left_share=1.0, rng=4)
    k, w, left = s.annotator, pv.outcome, pv.left_chosen
    dec = w != 0.5
    assert left[(k == 0) & dec].all()
    res = stable_arena(s.model_a, s.model_b, k, w, left_chosen=left)
    assert res.status[0] == "flagged"
    flag = next(f for f in res.flags[0] if f.reason == "position_bias")
    raw = [
        binomtest(int((left & dec & (k == j)).sum()), int((dec & (k == j)).sum())).pvalue
        for j in range(3)
    ]
    expected = _bh_reference(raw)[0]
    assert flag.p_value == pytest.approx(expected, rel=1e-9)
    assert flag.statistic == 1.0
    assert flag.threshold == 0.5
    assert raw[0] == pytest.approx(2 * 0.5 ** int((dec & (k == 0)).sum()))


def test_pilot_three_by_twelve_is_finite():
    """Issue: a 3-annotator, 12-pair pilot got no scale. Expected: finite abilities,
    standard errors and rating intervals, even when one item never lost."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 6, 12)
    b = (a + rng.integers(1, 6, 12)) % 6
    A, B, K = np.tile(a, 3), np.tile(b, 3), np.repeat(np.arange(3), 12)
    W = (rng.random(36) < 0.7).astype(float)
    W[A == 0], W[B == 0] = 1.0, 0.0  # item 0 never loses: no maximum likelihood
    res = stable_arena(A, B, K, W, delta=0)
    assert np.isfinite(res.abilities).all()
    assert np.isfinite(res.ability_standard_errors).all()
    assert np.isfinite(res.lower).all()
    assert np.isfinite(res.upper).all()
    assert np.all(res.upper - res.lower > 50)  # wide
    auto = stable_arena(A, B, K, W)  # dynamic delta, capped below the 12 votes each
    assert auto.delta < 12
    assert np.isfinite(auto.abilities).all()


@pytest.mark.parametrize("seed", range(4))
def test_delta_never_exceeds_what_annotators_reach(seed):
    """Issue: the dynamic delta (137) exceeded every annotator's votes (82-124). Expected:
    delta is at most the median vote count minus one, so half the annotators are judged."""
    s = simulate_arena(
        n_models=12, n_annotators=10, records_per_annotator=30, discrimination_sd=1.0, rng=seed
    )
    res = stable_arena(s.model_a, s.model_b, s.annotator, s.outcome)
    counts = np.bincount(s.annotator)
    assert res.delta <= np.median(counts) - 1
    assert res.delta < counts.max()
    assert (counts > res.delta).sum() >= counts.size / 2
    assert res.delta <= res.delta_uncapped


def test_honest_weak_annotators_rarely_flagged():
    """Issue: the dynamic epsilon flagged 11.5% of honest annotators at discrimination sd
    1.0. Expected (seeded simulation, 20 studies x 20 honest annotators): at most 5%."""
    flagged = total = 0
    for seed in range(20):
        s = simulate_arena(
            n_models=12, n_annotators=20, records_per_annotator=60, discrimination_sd=1.0, rng=seed
        )
        pv = perturb_votes(s, [], strategy="flip", rng=seed)
        res = stable_arena(
            s.model_a, s.model_b, s.annotator, pv.outcome, left_chosen=pv.left_chosen, fast=pv.fast
        )
        flagged += int((np.asarray(res.status) == "flagged").sum())
        total += s.n_annotators
    assert flagged / total <= 0.05


def test_too_fast_annotator_flagged(sim):
    pv = perturb_votes(sim, [2], strategy="too_fast", fast_share=0.8, rng=1)
    res = stable_arena(sim.model_a, sim.model_b, sim.annotator, pv.outcome, fast=pv.fast)
    assert res.status[2] == "flagged"
    flag = next(f for f in res.flags[2] if f.reason == "too_fast")
    assert flag.statistic > 0.6
    assert flag.threshold == 0.2
    assert flag.p_value < 1e-6


def test_low_agreement_with_items():
    """Annotators judging the same items: one who reverses every vote agrees with the
    others' majority less than by chance."""
    rng = np.random.default_rng(5)
    n_items, m = 60, 6
    a = rng.integers(0, 8, n_items)
    b = (a + rng.integers(1, 8, n_items)) % 8
    truth = rng.normal(size=8) * 1.5
    items = np.tile(np.arange(n_items), m)
    k = np.repeat(np.arange(m), n_items)
    p = expit(truth[a] - truth[b])
    w = (rng.random((m, n_items)) < p).astype(float)
    w[0] = 1.0 - w[0]
    res = stable_arena(np.tile(a, m), np.tile(b, m), k, w.ravel(), item=items)
    assert "low_agreement" in {f.reason for f in res.flags[0]}
    assert all("low_agreement" not in {f.reason for f in fl} for fl in res.flags[1:])


def test_verdicts_are_json_ready(sim):
    res = stable_arena(sim.model_a, sim.model_b, sim.annotator, sim.outcome)
    for j in range(sim.n_annotators):
        v = res.verdict(j)
        json.dumps(v)
        assert set(v) == {"status", "reasons", "votes_to_verdict"}
        assert (v["votes_to_verdict"] is None) == (v["status"] != "pending")
        for r in v["reasons"]:
            assert set(r) == {"reason", "statistic", "threshold", "p_value"}
            assert r["reason"] in FLAG_REASONS
    assert FlagReason("random", 1.0, 1.0, None).as_dict()["p_value"] is None
    assert res.rank_error_rate == pytest.approx(0.05)


# --------------------------------------------------------------------------- p-value adjustment


def _holm_reference(p):
    """Holm (1979) step-down, written out: sort, multiply by m - i, running max, cap."""
    p = list(p)
    order = sorted(range(len(p)), key=lambda i: p[i])
    out = [0.0] * len(p)
    run = 0.0
    for rank, i in enumerate(order):
        run = max(run, (len(p) - rank) * p[i])
        out[i] = min(1.0, run)
    return out


def _bh_reference(p):
    """Benjamini-Hochberg (1995) step-up, written out: min over j >= i of m p_(j) / j."""
    p = list(p)
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    for rank, i in enumerate(order):
        out[i] = min(1.0, min(m * p[order[j]] / (j + 1) for j in range(rank, m)))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_adjust_p_values_matches_references(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=15) ** 3
    np.testing.assert_allclose(adjust_p_values(p, method="holm"), _holm_reference(p), rtol=1e-12)
    np.testing.assert_allclose(adjust_p_values(p, method="bh"), _bh_reference(p), rtol=1e-12)
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    for method, sm in (("holm", "holm"), ("bh", "fdr_bh")):
        ref = multitest.multipletests(p, method=sm)[1]
        np.testing.assert_allclose(adjust_p_values(p, method=method), ref, rtol=1e-12)
    q = p.copy()
    q[[2, 7]] = np.nan
    got = adjust_p_values(q, method="bh")
    assert np.isnan(got[[2, 7]]).all()
    np.testing.assert_allclose(got[~np.isnan(q)], _bh_reference(q[~np.isnan(q)]), rtol=1e-12)


# --------------------------------------------------------------------------- penalised am-ELO


def _penalised(a, b, k, w, s, disc, tau, rprec):
    eta = disc[k] * (s[a] - s[b])
    ll = np.sum(w * log_expit(eta) + (1 - w) * log_expit(-eta))
    c = disc.mean()
    return ll - np.sum((disc / c - 1) ** 2) / (2 * tau**2) - rprec * np.sum((c * s) ** 2) / 2


def test_penalised_am_elo_is_a_stationary_point():
    """Expected: finite differences of the penalised log-likelihood vanish at the fit along
    every direction that keeps the constraints (mean s = 0, mean discrimination = 1)."""
    s0 = simulate_arena(n_models=6, n_annotators=5, records_per_annotator=15, rng=2)
    a, b, k, w = s0.model_a, s0.model_b, s0.annotator, s0.outcome
    w = np.where(k == 0, (s0.true_ratings[a] > s0.true_ratings[b]).astype(float), w)
    fit = am_elo(a, b, k, w, ability_prior_sd=1.5, rating_prior_sd=300.0)
    s, disc = fit.log_strengths, fit.discriminations
    rprec = 1.0 / (ELO_C * 300.0) ** 2
    rng = np.random.default_rng(0)
    h = 1e-5
    for _ in range(10):
        vs = rng.normal(size=s.size)
        va = rng.normal(size=disc.size)
        vs -= vs.mean()
        va -= va.mean()
        up = _penalised(a, b, k, w, s + h * vs, disc + h * va, 1.5, rprec)
        dn = _penalised(a, b, k, w, s - h * vs, disc - h * va, 1.5, rprec)
        assert abs(up - dn) / (2 * h) < 1e-5


def test_errors_carry_structured_fields():
    """Errors name the problem in fields, and never tell a command-line user to 'use elo()'
    or 'raise max_iter'."""
    with pytest.raises(DegenerateDataError) as info:
        am_elo([0, 1, 0], [1, 2, 2], [0, 0, 1], [1, 1, 1])
    assert info.value.reason in ("no_mle", "separated")
    assert "elo()" not in str(info.value)
    with pytest.raises(DegenerateDataError) as info:
        am_elo([0, 2], [1, 3], [0, 1], [1, 0])
    assert info.value.reason == "disconnected"
    rng = np.random.default_rng(2)
    a = rng.integers(0, 5, 500)
    b = (a + rng.integers(1, 5, 500)) % 5
    with pytest.raises(ConvergenceError) as cinfo:
        am_elo(a, b, rng.integers(0, 3, 500), rng.integers(0, 2, 500).astype(float), max_iter=1)
    assert cinfo.value.estimator == "am_elo"
    assert "max_iter" not in str(cinfo.value).split(";")[-1]


def test_two_annotators_get_no_ability_verdict_but_keep_per_vote_flags():
    """Regression: with two annotators each agrees with a ranking fitted mostly to their
    own votes, so the demo's 2-annotator groups came out 'reliable' on 4 votes. With fewer
    than MIN_ANNOTATORS_FOR_VERDICT decisive annotators, no ability verdict is given
    (pending, votes_to_verdict None); a per-vote flag (12/12 left) still applies."""
    from ranking.arena import MIN_ANNOTATORS_FOR_VERDICT

    assert MIN_ANNOTATORS_FOR_VERDICT == 3
    s = simulate_arena(n_models=6, n_annotators=2, records_per_annotator=60, tie_rate=0.0, rng=5)
    res = stable_arena(s.model_a, s.model_b, s.annotator, s.outcome)
    assert res.status == ("pending", "pending")
    fitted = [j for j in range(2) if "at least 3" in res.reasons[j]]
    assert fitted  # past delta, yet no verdict
    assert all(res.verdict(j)["votes_to_verdict"] is None for j in fitted)
    pv = perturb_votes(s, [0], strategy="position", left_share=1.0, rng=5)
    res = stable_arena(s.model_a, s.model_b, s.annotator, pv.outcome, left_chosen=pv.left_chosen)
    assert res.status[0] == "flagged"
    assert [f.reason for f in res.flags[0]] == ["position_bias"]
    assert res.status[1] == "pending"


def test_slowly_converging_fit_does_not_crash():
    """bench_flags found a study (20 annotators, 200 votes each, discrimination sd 1.0,
    9 flipped) whose penalised am-ELO fit crept past 200 Fisher-scoring iterations with a
    Newton decrement of 8.8e-10 against tol 1e-10, so ``stable_arena`` raised
    ConvergenceError. Expected: the fit is resumed and every annotator gets a status.
    Since the settled-direction rule, only 10 of the 20 annotators agree with the ranking
    significantly (two honest ones, discrimination 0.29 and 0.30, are not distinguishable
    from random; 9 are flipped), which is not a majority, so no ability verdict is given:
    every fitted annotator stays pending with that count, and no honest one is flagged
    (before, the flipped ones were flagged here, but the same rule flagged every honest
    annotator whenever such a split went the other way)."""
    gen = np.random.default_rng([99, 14])
    s = simulate_arena(
        n_models=20, n_annotators=20, records_per_annotator=200, discrimination_sd=1.0, rng=gen
    )
    ids = gen.choice(20, size=9, replace=False)
    pv = perturb_votes(s, ids, strategy="flip", rng=gen)
    res = stable_arena(
        s.model_a, s.model_b, s.annotator, pv.outcome, n_models=20, n_annotators=20,
        left_chosen=pv.left_chosen, fast=pv.fast,
    )  # fmt: skip
    st = np.asarray(res.status)
    assert set(st) <= {"reliable", "flagged", "pending"}
    assert not np.any(st[~pv.perturbed] == "flagged")
    assert np.all(st == "pending")
    assert "10 of 20 annotators agree with it significantly" in res.reasons[0]
    # an annotator that is itself significant waits for the others (None); one that is
    # not gets its own estimate of the votes still needed
    for j in range(20):
        undecided = 1.0 - res.ability_p_values[j] > 0.05 and res.ability_p_values[j] > 0.05
        assert (res.votes_to_verdict[j] is not None) == undecided


@pytest.mark.slow
def test_random_threshold_is_justified_by_false_and_true_flag_rates():
    """The ``random`` threshold (``_random_threshold``: 70% of the typical ability when
    honest annotators are alike, the 5% quantile of their log-normal spread when they
    differ; estimated only when the clearly honest annotators' median se/theta is below
    0.5, ``_HONEST_MAX_NOISE``, 0.42 before) is a tuned rule, so it is justified by the
    two error rates it must meet (issue 10's targets), on seeded simulations of 42
    annotators with 100 votes each:

    * honest-only studies, discrimination sd 0, 0.5 and 1.0, 6 studies each (756
      honest verdicts): at most 5% flagged ``random`` (observed: 0);
    * 10 of 42 annotators voting at random (the paper's random strategy), sd 0 and 0.5,
      4 studies each (80 random annotators): recall at least 0.8 (observed 77 of 80,
      0.963, with the predictive test of ``_random_test``; 71 of 80 with the earlier test
      of theta below the threshold; the binomial standard error of 80 verdicts at 0.9 is
      0.034, so 0.8 is three standard errors below).

    The derived alternative, the 5% quantile at the 95% upper confidence bound of the
    spread (a chi-square bound on the MAD-based sd), flagged no more honest annotators
    but lost 15-40 points of recall in these cells, so the tuned rule was kept."""
    false_random = honest = 0
    for sd in (0.0, 0.5, 1.0):
        for seed in range(6):
            s = simulate_arena(
                n_models=20, n_annotators=42, records_per_annotator=100,
                discrimination_sd=sd, rng=[int(sd * 10), seed],
            )  # fmt: skip
            res = stable_arena(s.model_a, s.model_b, s.annotator, s.outcome, n_annotators=42)
            false_random += sum(any(f.reason == "random" for f in fl) for fl in res.flags)
            honest += 42
    assert false_random / honest <= 0.05
    caught = eligible = 0
    for sd in (0.0, 0.5):
        for seed in range(4):
            gen = np.random.default_rng([7, int(sd * 10), seed])
            s = simulate_arena(
                n_models=20, n_annotators=42, records_per_annotator=100,
                discrimination_sd=sd, rng=gen,
            )  # fmt: skip
            ids = gen.choice(42, size=10, replace=False)
            pv = perturb_votes(s, ids, strategy="random", rng=gen)
            res = stable_arena(s.model_a, s.model_b, s.annotator, pv.outcome, n_annotators=42)
            elig = pv.perturbed & (res.n_records > res.delta)
            eligible += int(elig.sum())
            caught += int((np.asarray(res.status)[elig] == "flagged").sum())
    assert eligible >= 60
    assert caught / eligible >= 0.8


def test_fit_that_needs_a_thousand_iterations_does_not_crash():
    """bench_flags (3 annotators, 25 votes, sd 1.0, one too-fast annotator, seed
    crc32("3-25-10-too_fast-25") = 3698562137, study 2): the fit of two annotators, one
    of them nearly random, needs 1,330 Fisher-scoring iterations to reach a decrement of
    1e-8. Expected: a verdict for everyone, and the too-fast annotator flagged too_fast."""
    gen = np.random.default_rng([3698562137, 2])
    s = simulate_arena(
        n_models=5, n_annotators=3, records_per_annotator=25, discrimination_sd=1.0, rng=gen
    )
    ids = gen.choice(3, size=1, replace=False)
    pv = perturb_votes(s, ids, strategy="too_fast", rng=gen)
    res = stable_arena(
        s.model_a, s.model_b, s.annotator, pv.outcome, n_models=5, n_annotators=3,
        left_chosen=pv.left_chosen, fast=pv.fast,
    )  # fmt: skip
    assert len(res.status) == 3
    assert "too_fast" in [f.reason for f in res.flags[int(ids[0])]]


def test_even_split_is_oriented_by_the_median_annotator():
    """bench_flags (20 annotators, 200 votes, discrimination sd 0.5, 9 always against the
    true ranking; seed crc32("20-200-5-against-45") = 1091490115, study 0): 10 of the 11
    honest annotators agree with the true ranking, one (discrimination 0.35) nets -10 of
    its decisive votes, so counting signs gives 10 against 10 and eq. 7's sum of abilities
    (dominated by the confident against-voters) inverted the ranking: every honest
    annotator was flagged. Expected with the median rule: the ratings follow the true
    ranking (correlation > 0.9). The median breaks the even split the right way here, but
    nothing in the data says it must (the same count with the roles swapped is as likely),
    so since the settled-direction rule no ability verdict is given: 10 of 20 annotators
    agreeing significantly is not a majority, and every annotator stays pending rather
    than risking every honest one being flagged."""
    gen = np.random.default_rng([1091490115, 0])
    s = simulate_arena(
        n_models=20, n_annotators=20, records_per_annotator=200, discrimination_sd=0.5, rng=gen
    )
    ids = gen.choice(20, size=9, replace=False)
    pv = perturb_votes(s, ids, strategy="against", rng=gen)
    res = stable_arena(
        s.model_a, s.model_b, s.annotator, pv.outcome, n_models=20, n_annotators=20,
        left_chosen=pv.left_chosen, fast=pv.fast,
    )  # fmt: skip
    assert np.corrcoef(res.ratings, s.true_ratings)[0, 1] > 0.9
    st = np.asarray(res.status)
    assert np.all(st == "pending")
    assert "10 of 20 annotators agree with it significantly" in res.reasons[int(ids[0])]


@pytest.mark.slow
def test_large_fit_wandering_at_the_line_search_tolerance_does_not_crash():
    """bench_flags (200 annotators, 200 votes each, discrimination sd 1.0, 50 always
    against; seed crc32("200-200-10-against-25") = 3591604617, study 3): the penalised
    am-ELO fit's Newton decrement stayed near 3e-8 for 20,000 iterations (the line search
    accepts changes of 1e-12 of a log-likelihood of about 2e4), so even the retry at
    tol 1e-8 raised ConvergenceError. Expected: a verdict for everyone, every
    against-voter flagged."""
    gen = np.random.default_rng([3591604617, 3])
    s = simulate_arena(
        n_models=20, n_annotators=200, records_per_annotator=200, discrimination_sd=1.0, rng=gen
    )
    ids = gen.choice(200, size=50, replace=False)
    pv = perturb_votes(s, ids, strategy="against", rng=gen)
    res = stable_arena(
        s.model_a, s.model_b, s.annotator, pv.outcome, n_models=20, n_annotators=200,
        left_chosen=pv.left_chosen, fast=pv.fast,
    )  # fmt: skip
    assert len(res.status) == 200
    assert np.all(np.asarray(res.status)[ids] == "flagged")


def _am_score(a, b, k, w, s, th):
    """Gradient of the am-ELO log-likelihood in (log-strength s, discrimination theta)."""
    d = s[a] - s[b]
    r = w - expit(th[k] * d)
    gs = np.bincount(a, th[k] * r, s.size) - np.bincount(b, th[k] * r, s.size)
    return np.concatenate([gs, np.bincount(k, d * r, th.size)])


def test_observed_information_covariance_is_the_constrained_inverse_hessian():
    """information="observed" inverts the finite-difference Hessian of the log-likelihood
    under the constraints of eq. 7 (sum of log-strengths 0, mean discrimination 1); the
    ratings do not depend on it, and the expected information gives smaller errors here."""
    sim = simulate_arena(n_models=6, n_annotators=5, records_per_annotator=60, tie_rate=0.0, rng=3)
    args = (sim.model_a, sim.model_b, sim.annotator, sim.outcome)
    obs = am_elo(*args, information="observed")
    exp = am_elo(*args)
    np.testing.assert_allclose(obs.ratings, exp.ratings)
    a, b, k = (np.asarray(x) for x in args[:3])
    w = np.asarray(sim.outcome, dtype=float)
    s0 = (obs.ratings - obs.initial) * ELO_C
    th0 = obs.discriminations
    n, m = s0.size, th0.size
    x0 = np.concatenate([s0, th0])
    h = 1e-5
    hess = np.empty((n + m, n + m))
    for j in range(n + m):
        e = np.zeros(n + m)
        e[j] = h
        up, dn = x0 + e, x0 - e
        hess[:, j] = (
            _am_score(a, b, k, w, up[:n], up[n:]) - _am_score(a, b, k, w, dn[:n], dn[n:])
        ) / (2 * h)
    info = -(hess + hess.T) / 2
    g = np.zeros((2, n + m))
    g[0, :n] = 1.0
    g[1, n:] = 1.0
    kk = info + g.T @ g
    ki = np.linalg.inv(kk)
    v = ki - ki @ g.T @ np.linalg.inv(g @ ki @ g.T) @ g @ ki
    np.testing.assert_allclose(obs.rating_covariance * ELO_C**2, v[:n, :n], rtol=1e-4, atol=1e-9)
    assert np.all(obs.rating_standard_errors > 0)
    with pytest.raises(InvalidParameterError, match="information"):
        am_elo(*args, information="fisher")  # type: ignore[arg-type]
