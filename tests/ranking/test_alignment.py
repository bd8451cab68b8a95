"""Tests for ranking.alignment (EIP paper sec. 3.3, App. H.3, eq. 9, Table 2, Figure 7).

Expected numbers come from hand-worked cases (tests/ranking/data/
agreement_alignment_cases.json, with the working written out), from a slow,
obvious reference implementation kept in this file (loops over annotators and
pairs; bootstrap by physically resampling and relabelling), from
scikit-learn's cohen_kappa_score, and from ranking.pairwise.am_elo called
directly.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from ranking.alignment import (
    FIRST_HARDER,
    SECOND_HARDER,
    SKIP,
    TIE,
    alignment_report,
    human_difficulty_scale,
    predict_harder,
    vote_consensus,
)
from ranking.errors import (
    DegenerateDataError,
    InvalidParameterError,
    LengthMismatchError,
    RankingInputError,
    ShapeError,
)
from ranking.pairwise import am_elo
from tests.ranking.bits import bits

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "agreement_alignment_cases.json").read_text())["cases"]
HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------
# slow reference implementation


def ref_consensus(pair, annotator, vote, n_pairs, n_annot, margin=0.0, rule="weighted"):
    """Loop implementation of the documented consensus + near-tie rule."""
    n1 = [0] * n_pairs
    n2 = [0] * n_pairs
    for p, v in zip(pair, vote, strict=True):
        if v == FIRST_HARDER:
            n1[p] += 1
        elif v == SECOND_HARDER:
            n2[p] += 1
    cons = [0] * n_pairs
    decisive = [False] * n_pairs
    near = [False] * n_pairs
    for p in range(n_pairs):
        tot = n1[p] + n2[p]
        if tot == 0:
            continue
        if abs(n1[p] - n2[p]) / tot > margin + 1e-12:
            decisive[p] = True
            cons[p] = FIRST_HARDER if n1[p] > n2[p] else SECOND_HARDER
        else:
            near[p] = True
    weights = [0.0] * n_annot
    if rule == "weighted":
        agree = [0] * n_annot
        judged = [0] * n_annot
        for p, a, v in zip(pair, annotator, vote, strict=True):
            if v != SKIP and decisive[p]:
                judged[a] += 1
                agree[a] += int(v == cons[p])
        for a in range(n_annot):
            q = (agree[a] + 1) / (judged[a] + 2)
            weights[a] = max(0.0, math.log(q / (1 - q)))
        score = [0.0] * n_pairs
        for p, a, v in zip(pair, annotator, vote, strict=True):
            if v == FIRST_HARDER:
                score[p] += weights[a]
            elif v == SECOND_HARDER:
                score[p] -= weights[a]
        for p in range(n_pairs):
            if near[p] and abs(score[p]) > 1e-9:
                cons[p] = FIRST_HARDER if score[p] > 0 else SECOND_HARDER
    return cons, weights


def ref_stats(pred, pair, annotator, vote, n_pairs, n_annot, margin, rule, tie_credit):
    """Individual alignment (list per annotator, None if undefined), consensus, kappa."""
    cons, _ = ref_consensus(pair, annotator, vote, n_pairs, n_annot, margin, rule)
    ind = []
    for a in range(n_annot):
        credit, n = 0.0, 0
        for p, aa, v in zip(pair, annotator, vote, strict=True):
            if aa != a or v == SKIP:
                continue
            n += 1
            if pred[p] == v:
                credit += 1
            elif pred[p] == TIE:
                credit += tie_credit
        ind.append(credit / n if n else None)
    q = [p for p in range(n_pairs) if cons[p] != 0]
    if not q:
        return ind, None, None
    share = sum(
        1.0 if pred[p] == cons[p] else (tie_credit if pred[p] == TIE else 0.0) for p in q
    ) / len(q)
    y1 = [pred[p] for p in q]
    y2 = [cons[p] for p in q]
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            k = cohen_kappa_score(y1, y2, labels=[1, 2, 0])
    return ind, share, (None if math.isnan(k) else float(k))


def ref_bootstrap(difficulty, pairs, pair, annotator, vote, n_annot, n_boot, seed, margin, rule):
    """Physically resample pairs / annotators with the same random draws as the module."""
    pred_all = predict_harder(difficulty, pairs)
    n_pairs = len(pairs)
    rng = np.random.default_rng(seed)
    pair, annotator, vote = map(np.asarray, (pair, annotator, vote))
    idx_p = rng.integers(0, n_pairs, size=(n_boot, n_pairs))
    idx_a = rng.integers(0, n_annot, size=(n_boot, n_annot))
    out_p, out_a = [], []
    for b in range(n_boot):
        # pairs: copy k of pair p becomes a new pair; annotators unchanged
        rows_p, rows_a, rows_v, preds = [], [], [], []
        for new, old in enumerate(idx_p[b]):
            sel = pair == old
            rows_p += [new] * int(sel.sum())
            rows_a += annotator[sel].tolist()
            rows_v += vote[sel].tolist()
            preds.append(pred_all[:, old])
        preds = np.array(preds).T
        out_p.append(
            [
                ref_stats(preds[e], rows_p, rows_a, rows_v, n_pairs, n_annot, margin, rule, 0.0)
                for e in range(preds.shape[0])
            ]
        )
        # annotators: copy of annotator a becomes a new annotator id
        rows_p, rows_a, rows_v = [], [], []
        for new, old in enumerate(idx_a[b]):
            sel = annotator == old
            rows_p += pair[sel].tolist()
            rows_a += [new] * int(sel.sum())
            rows_v += vote[sel].tolist()
        out_a.append(
            [
                ref_stats(pred_all[e], rows_p, rows_a, rows_v, n_pairs, n_annot, margin, rule, 0.0)
                for e in range(pred_all.shape[0])
            ]
        )
    return out_p, out_a


def _pct(values, confidence=0.95):
    vals = np.array([v for v in values if v is not None], dtype=float)
    a = (1 - confidence) / 2
    return np.quantile(vals, [a, 1 - a]), vals.size


def _check_bootstrap(study, rule) -> None:
    difficulty, pairs, pair, annotator, vote, n_annot = study
    judged = np.asarray(vote) != SKIP
    if np.unique(np.asarray(pair)[judged]).size < 2:
        return
    if np.unique(np.asarray(annotator)[judged]).size < 2:
        return
    n_boot, seed = 30, 1234
    r = alignment_report(
        difficulty, pairs, pair, annotator, vote, n_annotators=n_annot,
        near_tie=rule, n_boot=n_boot, rng=seed,
    )  # fmt: skip
    out_p, out_a = ref_bootstrap(
        difficulty, pairs, pair, annotator, vote, n_annot, n_boot, seed, 0.0, rule
    )
    for e in range(difficulty.shape[0]):
        for name, col in (("consensus_alignment", 1), ("kappa", 2)):
            est = getattr(r, name)[e]
            for reps, interval in ((out_p, est.pairs_interval), (out_a, est.annotators_interval)):
                vals = [rep[e][col] for rep in reps]
                if all(v is None for v in vals):
                    assert interval is None
                    continue
                (lo, hi), n_valid = _pct(vals)
                assert interval.n_valid == n_valid
                np.testing.assert_allclose([interval.low, interval.high], [lo, hi], atol=1e-9)
        # mean individual alignment, bootstrap over pairs
        means = []
        for rep in out_p:
            ind = [v for v in rep[e][0] if v is not None]
            means.append(float(np.mean(ind)) if ind else None)
        (lo, hi), _ = _pct(means)
        ip = r.mean_individual[e].pairs_interval
        np.testing.assert_allclose([ip.low, ip.high], [lo, hi], atol=1e-9)
        # each annotator's own alignment, bootstrap over pairs
        for a in range(n_annot):
            vals = [rep[e][0][a] for rep in out_p]
            if all(v is None for v in vals) or np.ma.getmaskarray(r.individual)[e, a]:
                assert np.ma.getmaskarray(r.individual_low)[e, a]
                continue
            (lo, hi), _ = _pct(vals)
            np.testing.assert_allclose(
                [r.individual_low[e, a], r.individual_high[e, a]], [lo, hi], atol=1e-9
            )


# ---------------------------------------------------------------------------
# strategies


@st.composite
def studies(draw: st.DrawFn, *, min_annot: int = 1):
    """Random small difficulty studies with skips, ties in difficulty and missing votes."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_q = draw(st.integers(2, 8))
    n_pairs = draw(st.integers(1, 8))
    n_annot = draw(st.integers(min_annot, 6))
    n_est = draw(st.integers(1, 3))
    first = rng.integers(0, n_q, n_pairs)
    second = (first + rng.integers(1, n_q, n_pairs)) % n_q
    pairs = np.stack([first, second], axis=1)
    difficulty = rng.integers(0, 3, size=(n_est, n_q)).astype(float)  # many ties
    cells = [(p, a) for p in range(n_pairs) for a in range(n_annot)]
    keep = rng.random(len(cells)) < draw(st.sampled_from([0.5, 0.8, 1.0]))
    cells = [c for c, k in zip(cells, keep, strict=True) if k]
    if not cells:
        cells = [(0, 0)]
    order = rng.permutation(len(cells))
    pair = np.array([cells[i][0] for i in order])
    annotator = np.array([cells[i][1] for i in order])
    vote = rng.choice([SKIP, FIRST_HARDER, SECOND_HARDER], size=len(cells), p=[0.2, 0.4, 0.4])
    if (vote == SKIP).all():
        vote[0] = FIRST_HARDER
    return difficulty, pairs, pair, annotator, vote, n_annot


@st.composite
def malformed_studies(draw: st.DrawFn):
    """A well-formed study broken in one way; every variant must raise a named error."""
    difficulty, pairs, pair, annotator, vote, n_annot = draw(studies())
    pair, annotator, vote = np.array(pair), np.array(annotator), np.array(vote)
    kind = draw(
        st.sampled_from(
            ["code", "duplicate", "length", "pair_range", "nan", "self_pair", "pairs_shape", "neg"]
        )
    )
    if kind == "code":
        vote[draw(st.integers(0, len(vote) - 1))] = draw(st.sampled_from([-1, 3, 7]))
    elif kind == "duplicate":
        pair, annotator, vote = (
            np.r_[pair, pair[:1]],
            np.r_[annotator, annotator[:1]],
            np.r_[vote, vote[:1]],
        )
    elif kind == "length":
        vote = vote[:-1] if len(vote) > 1 else np.r_[vote, vote]
    elif kind == "pair_range":
        pair[0] = len(pairs) + draw(st.integers(0, 3))
    elif kind == "nan":
        difficulty = difficulty.copy()
        difficulty[0, pairs[0, 0]] = np.nan
    elif kind == "self_pair":
        pairs = pairs.copy()
        pairs[0, 1] = pairs[0, 0]
    elif kind == "pairs_shape":
        pairs = pairs[:, :1]
    else:
        annotator[0] = -1
    return difficulty, pairs, pair, annotator, vote, n_annot


# ---------------------------------------------------------------------------
# hand-built cases


class TestHandBuilt:
    def test_case_skips_and_exact_tie(self) -> None:
        """Reference: the worked hand computation in agreement_alignment_cases.json case 0."""
        c = CASES[0]
        exp = c["expected"]
        for rule in ("weighted", "exclude"):
            r = alignment_report(
                c["difficulty"],
                c["pairs"],
                c["pair"],
                c["annotator"],
                c["vote"],
                near_tie=rule,
                n_boot=0,
            )
            e = exp[rule]
            assert r.predictions.tolist() == exp["predictions"]
            assert r.consensus.consensus.tolist() == e["consensus"]
            assert r.consensus.n_near_ties == e["n_near_ties"]
            assert r.consensus.n_resolved == e["n_resolved"]
            assert r.consensus.n_excluded == e["n_excluded"]
            assert r.consensus.n_without_votes == e["n_without_votes"]
            if "annotator_weights" in e:
                np.testing.assert_allclose(
                    r.consensus.annotator_weights, e["annotator_weights"], atol=1e-12
                )
            np.testing.assert_allclose(
                [x.value for x in r.consensus_alignment], e["consensus_alignment"], atol=1e-12
            )
            np.testing.assert_allclose([x.value for x in r.kappa], e["kappa"], atol=1e-12)
            assert r.n_judged.tolist() == exp["n_judged"]
            ind = exp["individual"]
            for i, row in enumerate(ind):
                for a, v in enumerate(row):
                    if v is None:
                        assert np.ma.getmaskarray(r.individual)[i, a]
                    else:
                        np.testing.assert_allclose(r.individual[i, a], v, atol=1e-12)
            # kappa: independent check with sklearn on the consensus pairs
            q = r.consensus.consensus != 0
            for i in range(2):
                ref = cohen_kappa_score(r.predictions[i][q], r.consensus.consensus[q])
                np.testing.assert_allclose(r.kappa[i].value, ref, atol=1e-12)
            # intervals are absent with n_boot=0 and never NaN
            assert r.kappa[0].pairs_interval is None
            assert not np.isnan(np.ma.getdata(r.individual)).any()

    def test_case_tied_prediction(self) -> None:
        """Reference: the worked hand computation in case 1 (tie_credit 0 and 0.5)."""
        c = CASES[1]
        exp = c["expected"]
        args = (c["difficulty"], c["pairs"], c["pair"], c["annotator"], c["vote"])
        r0 = alignment_report(*args, n_boot=0)
        r5 = alignment_report(*args, n_boot=0, tie_credit=0.5)
        assert r0.predictions.tolist() == exp["predictions"]
        assert r0.n_tied_predictions.tolist() == [1]
        assert r0.consensus.consensus.tolist() == exp["consensus"]
        assert r0.consensus.n_excluded == exp["n_excluded"]
        np.testing.assert_allclose(r0.individual, exp["individual_tie_credit_0"])
        np.testing.assert_allclose(r5.individual, exp["individual_tie_credit_half"])
        assert r0.consensus_alignment[0].value == exp["consensus_alignment"][0]
        # one consensus pair, both sides on category 1: kappa is 0/0
        assert r0.kappa[0].undefined
        assert "single category" in r0.kappa[0].reason

    def test_near_tie_margin(self) -> None:
        """Closed form: a 3-2 split has margin 1/5 = 0.2 and is a near-tie when margin >= 0.2.

        Pair 0 is 3-2, pair 1 is 5-0. On the decisive pair 1 every annotator voted with
        the majority (1 of 1: p = 2/3, weight ln 2), so pair 0's weighted score is
        3 ln 2 - 2 ln 2 > 0: first harder.
        """
        pair = [0] * 5 + [1] * 5
        annotator = list(range(5)) * 2
        vote = [1, 1, 1, 2, 2] + [2] * 5
        loose = vote_consensus(pair, annotator, vote, near_tie_margin=0.0)
        assert loose.decisive.tolist() == [True, True]
        assert loose.n_near_ties == 0
        tight = vote_consensus(pair, annotator, vote, near_tie_margin=0.2)
        assert tight.near_tie.tolist() == [True, False]
        assert tight.consensus.tolist() == [1, 2]
        np.testing.assert_allclose(tight.annotator_weights, [math.log(2)] * 5)
        excl = vote_consensus(pair, annotator, vote, near_tie_margin=0.2, near_tie="exclude")
        assert excl.consensus.tolist() == [0, 2]
        assert excl.n_excluded == 1

    def test_reliable_minority_wins_a_tie(self) -> None:
        """Closed form: in a 1-1 tie the annotator with the better record elsewhere wins.

        Annotator 0 agrees with the majority on 3 decisive pairs (p = 4/5, weight ln 4),
        annotator 1 disagrees on all 3 (p = 1/5, weight 0), so the tie goes to annotator 0.
        """
        pair = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3]
        annotator = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1]
        vote = [1, 2, 1, 1, 2, 1, 2, 1, 2, 2, 1]
        c = vote_consensus(pair, annotator, vote)
        np.testing.assert_allclose(c.annotator_weights[:2], [math.log(4), 0.0], atol=1e-12)
        assert c.consensus.tolist() == [1, 1, 2, 2]

    def test_predict_harder_ties_and_infinities(self) -> None:
        """Closed form: equal (or equally infinite) difficulties are a tie, never a guess."""
        d = [0.0, np.inf, np.inf, -np.inf, 0.05]
        pred = predict_harder(d, [[0, 1], [1, 2], [3, 0], [0, 4]])
        assert pred.tolist() == [SECOND_HARDER, TIE, SECOND_HARDER, SECOND_HARDER]
        pred = predict_harder(d, [[0, 4]], atol=0.1)
        assert pred.tolist() == [TIE]
        two = predict_harder([[0, 1], [1, 0]], [[0, 1]])
        assert two.shape == (2, 1)

    def test_perfect_agreement(self) -> None:
        """Closed form: votes equal to the predictions give 1 everywhere."""
        rng = np.random.default_rng(0)
        d = rng.normal(size=20)
        pairs = np.stack([np.arange(0, 20, 2), np.arange(1, 20, 2)], axis=1)
        pred = predict_harder(d, pairs)
        pair = np.repeat(np.arange(10), 4)
        annotator = np.tile(np.arange(4), 10)
        r = alignment_report(d, pairs, pair, annotator, pred[pair], n_boot=50, rng=1)
        np.testing.assert_allclose(r.individual, 1.0)
        assert r.consensus_alignment[0].value == 1.0
        assert r.kappa[0].value == pytest.approx(1.0)
        assert r.mean_individual[0].pairs_interval.low == 1.0


# ---------------------------------------------------------------------------
# properties against the slow reference


class TestAgainstReference:
    @HYP
    @given(
        studies(),
        st.sampled_from([0.0, 0.2, 0.5]),
        st.sampled_from(["weighted", "exclude"]),
        st.sampled_from([0.0, 0.5]),
    )
    def test_point_estimates(self, study, margin, rule, tie_credit) -> None:
        """Reference: ref_stats / ref_consensus loops (and sklearn for kappa)."""
        difficulty, pairs, pair, annotator, vote, n_annot = study
        r = alignment_report(
            difficulty,
            pairs,
            pair,
            annotator,
            vote,
            n_annotators=n_annot,
            near_tie_margin=margin,
            near_tie=rule,
            tie_credit=tie_credit,
            n_boot=0,
        )
        cons, weights = ref_consensus(pair, annotator, vote, len(pairs), n_annot, margin, rule)
        assert r.consensus.consensus.tolist() == cons
        np.testing.assert_allclose(r.consensus.annotator_weights, weights, atol=1e-12)
        for e in range(difficulty.shape[0]):
            ind, share, kap = ref_stats(
                r.predictions[e], pair, annotator, vote, len(pairs), n_annot, margin, rule,
                tie_credit,
            )  # fmt: skip
            for a, v in enumerate(ind):
                if v is None:
                    assert np.ma.getmaskarray(r.individual)[e, a]
                else:
                    np.testing.assert_allclose(r.individual[e, a], v, atol=1e-12)
            defined = [v for v in ind if v is not None]
            np.testing.assert_allclose(r.mean_individual[e].value, np.mean(defined), atol=1e-12)
            if share is None:
                assert r.consensus_alignment[e].undefined
                assert r.consensus_alignment[e].reason
            else:
                np.testing.assert_allclose(r.consensus_alignment[e].value, share, atol=1e-12)
            if kap is None:
                assert r.kappa[e].undefined
                assert r.kappa[e].reason
            else:
                np.testing.assert_allclose(r.kappa[e].value, kap, atol=1e-12)

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(studies(min_annot=2), st.sampled_from(["weighted", "exclude"]))
    def test_bootstrap_matches_physical_resampling(self, study, rule) -> None:
        """Reference: resampling pairs/annotators by copying rows, with the same draws."""
        _check_bootstrap(study, rule)

    @pytest.mark.parametrize("rule", ["weighted", "exclude"])
    def test_bootstrap_fixed_study(self, rule) -> None:
        """Reference: as above, on a fixed study that certainly has near-ties and skips."""
        _, pairs, p, a, v, _ = _synthetic(5, n_q=8, n_pairs=10, n_annot=4)
        difficulty = np.random.default_rng(3).integers(0, 4, size=(2, 8)).astype(float)
        assert vote_consensus(p, a, v).n_near_ties > 0
        _check_bootstrap((difficulty, pairs, p, a, v, 4), rule)

    @HYP
    @given(studies(), st.integers(0, 2**32 - 1))
    def test_invariant_to_vote_order_and_annotator_labels(self, study, seed) -> None:
        """Closed form: the statistics do not depend on row order or annotator ids."""
        difficulty, pairs, pair, annotator, vote, n_annot = study
        rng = np.random.default_rng(seed)
        perm_rows = rng.permutation(len(pair))
        relabel = rng.permutation(n_annot)
        a = alignment_report(
            difficulty, pairs, pair, annotator, vote, n_annotators=n_annot, n_boot=0
        )
        new_annotator = relabel[np.asarray(annotator)[perm_rows]]
        b = alignment_report(
            difficulty, pairs, np.asarray(pair)[perm_rows], new_annotator,
            np.asarray(vote)[perm_rows], n_annotators=n_annot, n_boot=0,
        )  # fmt: skip
        assert a.consensus.consensus.tolist() == b.consensus.consensus.tolist()
        for x, y in zip(
            a.consensus_alignment + a.kappa, b.consensus_alignment + b.kappa, strict=True
        ):
            assert x.value == pytest.approx(y.value) if x.value is not None else y.value is None
        np.testing.assert_allclose(
            np.ma.getdata(a.individual)[:, :], np.ma.getdata(b.individual)[:, relabel]
        )

    @HYP
    @given(studies())
    def test_invariant_to_swapping_sides(self, study) -> None:
        """Closed form: showing the second question first (and flipping votes) changes nothing."""
        difficulty, pairs, pair, annotator, vote, n_annot = study
        flipped = np.where(
            vote == FIRST_HARDER, SECOND_HARDER, np.where(vote == SECOND_HARDER, FIRST_HARDER, SKIP)
        )
        a = alignment_report(
            difficulty, pairs, pair, annotator, vote, n_annotators=n_annot, n_boot=0
        )
        b = alignment_report(
            difficulty, pairs[:, ::-1], pair, annotator, flipped, n_annotators=n_annot, n_boot=0
        )
        np.testing.assert_allclose(np.ma.getdata(a.individual), np.ma.getdata(b.individual))
        for x, y in zip(
            a.consensus_alignment + a.kappa, b.consensus_alignment + b.kappa, strict=True
        ):
            if x.value is None:
                assert y.value is None
            else:
                assert x.value == pytest.approx(y.value)


# ---------------------------------------------------------------------------
# degenerate cases and malformed input


class TestDegenerate:
    @HYP
    @given(malformed_studies())
    def test_malformed_studies_raise(self, study) -> None:
        """Evalica-style bad data: each malformed variant raises a RankingInputError."""
        difficulty, pairs, pair, annotator, vote, _ = study
        with pytest.raises(RankingInputError):
            alignment_report(difficulty, pairs, pair, annotator, vote, n_boot=0)
        if np.isfinite(difficulty).all():
            with pytest.raises(RankingInputError):
                human_difficulty_scale(pairs, pair, annotator, vote, virtual_ties=0)

    def test_no_votes(self) -> None:
        with pytest.raises(DegenerateDataError, match="no votes"):
            alignment_report([0.0, 1.0], [[0, 1]], [], [], [])

    def test_all_skips(self) -> None:
        with pytest.raises(DegenerateDataError, match="skip"):
            alignment_report([0.0, 1.0], [[0, 1]], [0, 0], [0, 1], [SKIP, SKIP])
        c = vote_consensus([0, 0], [0, 1], [SKIP, SKIP])
        assert c.consensus.tolist() == [0]
        assert c.n_without_votes == 1
        with pytest.raises(DegenerateDataError, match="non-skipped"):
            human_difficulty_scale([[0, 1]], [0], [0], [SKIP])

    def test_one_annotator(self) -> None:
        """One annotator: everything defined except the annotator bootstrap, which is None."""
        r = alignment_report(
            [0.0, 1.0, 2.0, 3.0], [[0, 1], [3, 2]], [0, 1], [0, 0], [2, 1], n_boot=20, rng=0
        )
        assert r.individual[0, 0] == 1.0
        assert r.consensus_alignment[0].value == 1.0
        assert r.consensus_alignment[0].annotators_interval is None
        assert r.consensus_alignment[0].pairs_interval is not None

    def test_kappa_undefined_when_one_category(self) -> None:
        """Closed form: consensus and predictions all 'first harder' -> kappa is 0/0."""
        r = alignment_report(
            [1.0, 0.0, 1.0, 0.0], [[0, 1], [2, 3]], [0, 1], [0, 0], [1, 1], n_boot=10
        )
        assert r.consensus_alignment[0].value == 1.0
        assert r.kappa[0].undefined
        assert r.kappa[0].value is None
        assert r.kappa_detail[0].undefined

    def test_malformed(self) -> None:
        d, pairs = [0.0, 1.0, 2.0], [[0, 1], [1, 2]]
        with pytest.raises(InvalidParameterError, match="code"):
            alignment_report(d, pairs, [0], [0], [3])
        with pytest.raises(InvalidParameterError, match="more than once"):
            alignment_report(d, pairs, [0, 0], [1, 1], [1, 2])
        with pytest.raises(LengthMismatchError):
            alignment_report(d, pairs, [0, 1], [0], [1, 2])
        with pytest.raises(InvalidParameterError, match="only 2 items"):
            alignment_report(d, pairs, [2], [0], [1])
        with pytest.raises(InvalidParameterError, match="NaN"):
            alignment_report([0.0, np.nan, 1.0], pairs, [0], [0], [1])
        with pytest.raises(InvalidParameterError, match="against itself"):
            alignment_report(d, [[0, 0]], [0], [0], [1])
        with pytest.raises(ShapeError):
            alignment_report(d, [0, 1], [0], [0], [1])
        with pytest.raises(InvalidParameterError, match="near_tie"):
            alignment_report(d, pairs, [0], [0], [1], near_tie="coin")  # type: ignore[arg-type]
        with pytest.raises(InvalidParameterError, match="near_tie_margin"):
            alignment_report(d, pairs, [0], [0], [1], near_tie_margin=1.0)
        with pytest.raises(InvalidParameterError, match="tie_credit"):
            alignment_report(d, pairs, [0], [0], [1], tie_credit=2.0)
        with pytest.raises(InvalidParameterError, match="n_boot"):
            alignment_report(d, pairs, [0], [0], [1], n_boot=-1)
        with pytest.raises(InvalidParameterError, match="estimator_names"):
            alignment_report(d, pairs, [0], [0], [1], estimator_names=["a", "b"])
        with pytest.raises(InvalidParameterError, match="negative"):
            alignment_report(d, pairs, [0], [-1], [1])


# ---------------------------------------------------------------------------
# human difficulty scale (shares ranking.pairwise.am_elo)


def _synthetic(seed: int, n_q: int = 30, n_pairs: int = 120, n_annot: int = 12):
    rng = np.random.default_rng(seed)
    true = rng.normal(size=n_q)
    first = rng.integers(0, n_q, n_pairs)
    second = (first + rng.integers(1, n_q, n_pairs)) % n_q
    pairs = np.stack([first, second], axis=1)
    disc = rng.uniform(0.5, 3.0, n_annot)
    p_idx, a_idx = np.meshgrid(np.arange(n_pairs), np.arange(n_annot), indexing="ij")
    p_idx, a_idx = p_idx.ravel(), a_idx.ravel()
    diff = true[pairs[p_idx, 0]] - true[pairs[p_idx, 1]]
    p_first = 1.0 / (1.0 + np.exp(-disc[a_idx] * diff))
    vote = np.where(rng.random(p_idx.size) < p_first, FIRST_HARDER, SECOND_HARDER)
    vote[rng.random(p_idx.size) < 0.1] = SKIP
    return true, pairs, p_idx, a_idx, vote, disc


class TestHumanScale:
    def test_equals_am_elo_on_the_same_votes(self) -> None:
        """Reference: ranking.pairwise.am_elo called directly (first harder = first wins)."""
        _, pairs, p, a, v, _ = _synthetic(0)
        res = human_difficulty_scale(pairs, p, a, v, extremes="raise", virtual_ties=0)
        keep = v != SKIP
        fit = am_elo(
            pairs[p[keep], 0], pairs[p[keep], 1], a[keep], (v[keep] == FIRST_HARDER).astype(float),
            initial=0.0,
        )  # fmt: skip
        np.testing.assert_allclose(np.ma.getdata(res.difficulty), fit.ratings, atol=1e-9)
        np.testing.assert_allclose(np.ma.getdata(res.reliability), fit.discriminations, atol=1e-9)
        np.testing.assert_allclose(np.ma.getdata(res.lower), fit.lower, atol=1e-9)
        assert not np.ma.getmaskarray(res.difficulty).any()

    def test_virtual_ties_equal_am_elo_with_tie_rows(self) -> None:
        """Reference: am_elo on the votes plus, per annotator k, one tie (outcome 0.5) on
        its judged pair number k mod n_k (pairs in index order), built here by hand."""
        _, pairs, p, a, v, _ = _synthetic(4)
        keep = v != SKIP
        p, a, v = p[keep], a[keep], v[keep]
        res = human_difficulty_scale(pairs, p, a, v, extremes="raise", virtual_ties=1)
        tie_rows = []
        for k in np.unique(a):
            mine = np.flatnonzero(a == k)
            mine = mine[np.argsort(p[mine])]
            tie_rows.append(mine[k % mine.size])
        tie_rows = np.array(tie_rows)
        qa = np.r_[pairs[p, 0], pairs[p[tie_rows], 0]]
        qb = np.r_[pairs[p, 1], pairs[p[tie_rows], 1]]
        kk = np.r_[a, a[tie_rows]]
        w = np.r_[(v == FIRST_HARDER).astype(float), np.full(tie_rows.size, 0.5)]
        fit = am_elo(qa, qb, kk, w, initial=0.0)
        np.testing.assert_allclose(np.ma.getdata(res.difficulty), fit.ratings, atol=1e-9)
        assert res.n_virtual_ties == np.unique(a).size

    def test_virtual_tie_keeps_a_perfect_annotator_finite(self) -> None:
        """Closed form: an annotator who agrees with the ranking on every vote has an
        infinite MLE discrimination (am_elo raises); one virtual tie makes it finite."""
        true, pairs, p, a, v, _ = _synthetic(0)
        gap = np.abs(true[pairs[:, 0]] - true[pairs[:, 1]])
        easy = np.argsort(-gap)[:4]  # the four clearest pairs
        new_v = np.where(true[pairs[easy, 0]] > true[pairs[easy, 1]], FIRST_HARDER, SECOND_HARDER)
        p2, a2, v2 = np.r_[p, easy], np.r_[a, [12] * 4], np.r_[v, new_v]
        with pytest.raises(DegenerateDataError, match="every vote"):
            human_difficulty_scale(pairs, p2, a2, v2, virtual_ties=0)
        res = human_difficulty_scale(pairs, p2, a2, v2, virtual_ties=1)
        assert np.isfinite(np.ma.getdata(res.reliability)).all()
        assert res.reliability[12] > 0

    def test_recovers_difficulty_and_reliability(self) -> None:
        """Recovery: data generated from the model; the fit tracks the truth."""
        true, pairs, p, a, v, disc = _synthetic(1, n_q=40, n_pairs=300, n_annot=15)
        est = np.stack([true, -true, np.zeros_like(true)])
        res = human_difficulty_scale(
            pairs, p, a, v, difficulty=est, estimator_names=["t", "neg", "flat"]
        )
        assert res.spearman[0].value > 0.9
        assert res.kendall[0].value > 0.75
        assert res.spearman[1].value < -0.9
        assert res.spearman[2].undefined
        assert "same difficulty" in res.spearman[2].reason
        fitted = ~np.ma.getmaskarray(res.difficulty)
        from scipy.stats import spearmanr

        assert spearmanr(np.ma.getdata(res.reliability), disc).statistic > 0.6
        np.testing.assert_allclose(
            res.spearman[0].value,
            spearmanr(true[fitted], np.ma.getdata(res.difficulty)[fitted]).statistic,
        )
        assert (np.ma.getdata(res.lower) <= np.ma.getdata(res.difficulty)).all()

    def test_always_harder_question_is_excluded_and_reported(self) -> None:
        """Closed form: a question never voted easier has no finite MLE; it is masked."""
        _, pairs, p, a, v, _ = _synthetic(2)
        # add question 30, always voted harder than question 0 by every annotator
        pairs = np.vstack([pairs, [[30, 0]]])
        extra = len(pairs) - 1
        p = np.concatenate([p, [extra] * 3])
        a = np.concatenate([a, [0, 1, 2]])
        v = np.concatenate([v, [FIRST_HARDER] * 3])
        res = human_difficulty_scale(pairs, p, a, v, n_questions=31)
        assert res.always_harder[30]
        assert np.ma.getmaskarray(res.difficulty)[30]
        assert not np.isnan(np.ma.getdata(res.difficulty)).any()
        flagged = res.always_harder | res.always_easier
        np.testing.assert_array_equal(np.ma.getmaskarray(res.difficulty), flagged)
        with pytest.raises(DegenerateDataError, match="not identified"):
            human_difficulty_scale(pairs, p, a, v, n_questions=31, extremes="raise", virtual_ties=0)

    def test_chain_of_extremes_is_peeled_and_the_main_component_kept(self) -> None:
        """Closed form: 32 > 31 > (questions 0-29) > 33, each link always voted the same way.

        32 is a source first; once it is gone 31 is one; 33 is a sink. The largest
        strongly connected component (questions 0-29) is never dropped.
        """
        _, pairs, p, a, v, _ = _synthetic(2)
        base = len(pairs)
        pairs = np.vstack([pairs, [[32, 31], [31, 5], [33, 7]]])
        p = np.r_[p, [base] * 2, [base + 1] * 2, [base + 2] * 2]
        a = np.r_[a, [0, 1] * 3]
        v = np.r_[v, [FIRST_HARDER] * 4, [SECOND_HARDER] * 2]
        res = human_difficulty_scale(pairs, p, a, v, n_questions=34)
        assert res.always_harder[[31, 32]].all()
        assert res.always_easier[33]
        assert not (res.always_harder & res.always_easier).any()
        # the synthetic data's own extremes aside, the 30-question core stays fitted
        assert (~np.ma.getmaskarray(res.difficulty)[:30]).sum() >= 27

    def test_disjoint_pairs_are_not_identified(self) -> None:
        """Closed form: pairs that share no question give a disconnected comparison graph."""
        pairs = [[0, 1], [2, 3]]
        pair = [0, 0, 0, 1, 1, 1]
        annotator = [0, 1, 2, 0, 1, 2]
        vote = [1, 2, 1, 2, 1, 2]
        with pytest.raises(DegenerateDataError, match="not connected"):
            human_difficulty_scale(pairs, pair, annotator, vote)


# ---------------------------------------------------------------------------
# two-way bootstrap (pairs and annotators together; Owen, 2007)


def ref_two_way(difficulty, pairs, pair, annotator, vote, n_annot, n_boot, seed, rule):
    """Physically resample pairs and annotators together, with the module's draws
    (``resample="both"`` alone, fewer than 256 replicates: pair draws, then annotator draws)."""
    pred_all = predict_harder(difficulty, pairs)
    n_pairs = len(pairs)
    rng = np.random.default_rng(seed)
    pair, annotator, vote = map(np.asarray, (pair, annotator, vote))
    idx_p = rng.integers(0, n_pairs, size=(n_boot, n_pairs))
    idx_a = rng.integers(0, n_annot, size=(n_boot, n_annot))
    out = []
    for b in range(n_boot):
        rows_p, rows_a, rows_v = [], [], []
        for new_p, old_p in enumerate(idx_p[b]):
            for new_a, old_a in enumerate(idx_a[b]):
                sel = (pair == old_p) & (annotator == old_a)
                rows_p += [new_p] * int(sel.sum())
                rows_a += [new_a] * int(sel.sum())
                rows_v += vote[sel].tolist()
        preds = pred_all[:, idx_p[b]]
        out.append(
            [
                ref_stats(preds[e], rows_p, rows_a, rows_v, n_pairs, n_annot, 0.0, rule, 0.0)
                for e in range(preds.shape[0])
            ]
        )
    return out


class TestTwoWayBootstrap:
    @pytest.mark.parametrize("rule", ["weighted", "exclude"])
    def test_matches_physical_two_way_resampling(self, rule) -> None:
        _, pairs, p, a, v, _ = _synthetic(5, n_q=8, n_pairs=10, n_annot=4)
        difficulty = np.random.default_rng(3).integers(0, 4, size=(2, 8)).astype(float)
        n_boot, seed = 40, 99
        r = alignment_report(
            difficulty, pairs, p, a, v, n_annotators=4, near_tie=rule, n_boot=n_boot, rng=seed,
            resample="both",
        )  # fmt: skip
        assert r.schemes == ("both",)
        ref = ref_two_way(difficulty, pairs, p, a, v, 4, n_boot, seed, rule)
        for e in range(2):
            for name, col in (("consensus_alignment", 1), ("kappa", 2)):
                est = getattr(r, name)[e]
                assert est.pairs_interval is None
                assert est.annotators_interval is None
                vals = [rep[e][col] for rep in ref]
                if all(x is None for x in vals):
                    assert est.both_interval is None
                    continue
                (lo, hi), n_valid = _pct(vals)
                assert est.both_interval.scheme == "both"
                assert est.interval("both") is est.both_interval
                assert est.both_interval.n_valid == n_valid
                np.testing.assert_allclose(
                    [est.both_interval.low, est.both_interval.high], [lo, hi], atol=1e-9
                )
            means = []
            for rep in ref:
                ind = [x for x in rep[e][0] if x is not None]
                means.append(float(np.mean(ind)) if ind else None)
            (lo, hi), _ = _pct(means)
            ib = r.mean_individual[e].both_interval
            np.testing.assert_allclose([ib.low, ib.high], [lo, hi], atol=1e-9)

    def test_schemes_are_labelled_and_one_way_draws_unchanged(self) -> None:
        _, pairs, p, a, v, _ = _synthetic(7, n_q=8, n_pairs=12, n_annot=5)
        d = np.random.default_rng(1).random((1, 8))
        old = alignment_report(d, pairs, p, a, v, n_boot=60, rng=3)
        new = alignment_report(
            d, pairs, p, a, v, n_boot=60, rng=3, resample=["annotators", "both", "units"]
        )
        assert old.schemes == ("units", "annotators")
        assert new.schemes == ("units", "annotators", "both")
        for x, y in zip(old.kappa + old.consensus_alignment, new.kappa + new.consensus_alignment,
                        strict=True):  # fmt: skip
            assert x.pairs_interval == y.pairs_interval
            assert x.annotators_interval == y.annotators_interval
            assert x.both_interval is None
            assert y.both_interval is not None
            for scheme in ("units", "annotators", "both"):
                assert y.interval(scheme).scheme == scheme
        with pytest.raises(InvalidParameterError, match="resample"):
            alignment_report(d, pairs, p, a, v, n_boot=5, resample="raters")
        with pytest.raises(InvalidParameterError, match="scheme"):
            new.kappa[0].interval("pairs")


@pytest.mark.parametrize(("tie_credit", "margin"), [(0.0, 0.0), (0.5, 0.2), (0.3, 0.0)])
def test_float32_products_of_counts_equal_the_float64_ones_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch, tie_credit: float, margin: float
) -> None:
    """The bootstrap multiplies counts by 0/1 (or half) matrices in float32, where every
    partial sum is an exact multiple of 1/2 (ranking.alignment._count_matmul): the report
    must be identical to the all-float64 computation (forced here with a limit of 0),
    intervals included; a tie credit of 0.3 keeps float64 throughout."""
    import ranking.alignment as al

    rng = np.random.default_rng(4)
    n_q, n_p, n_a = 40, 60, 25
    pairs = np.array([rng.choice(n_q, 2, replace=False) for _ in range(n_p)])
    pair, annotator = (g.ravel() for g in np.meshgrid(np.arange(n_p), np.arange(n_a)))
    keep = rng.random(pair.size) < 0.8
    pair, annotator = pair[keep], annotator[keep]
    vote = rng.choice([0, 1, 2], size=pair.size, p=[0.1, 0.5, 0.4])
    difficulty = np.round(rng.normal(size=(3, n_q)), 1)  # rounded: some tied predictions
    kwargs = dict(
        n_annotators=n_a,
        tie_credit=tie_credit,
        near_tie_margin=margin,
        n_boot=300,
        resample=("units", "annotators", "both"),
    )
    fast = alignment_report(difficulty, pairs, pair, annotator, vote, rng=7, **kwargs)
    monkeypatch.setattr(al, "_EXACT32_MAX", 0)
    slow = alignment_report(difficulty, pairs, pair, annotator, vote, rng=7, **kwargs)
    assert bits(fast) == bits(slow)
    assert fast.kappa[0].both_interval is not None


def test_intervals_sorted_in_blocks_equal_one_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    """_interval sorts the replicates a block of columns at a time (memory at 1,000
    annotators); the percentiles are numpy's "linear" ones of each column either way."""
    import ranking.alignment as al

    rng = np.random.default_rng(5)
    samples = rng.normal(size=(200, 3, 7))
    samples[rng.random(samples.shape) < 0.1] = np.nan  # the internal undefined sentinels
    samples[:, 1, 2] = np.nan  # a column without a valid replicate
    whole = al._interval(samples, 0.9)
    monkeypatch.setattr(al, "_INTERVAL_BLOCK", 4)
    blocks = al._interval(samples, 0.9)
    for a, b in zip(whole, blocks, strict=True):
        assert a.shape == b.shape == (3, 7)
        assert a.tobytes() == b.tobytes()
    with warnings.catch_warnings():  # the all-NaN column: "All-NaN slice encountered"
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.nanquantile(samples, [0.05, 0.95], axis=0)  # numpy's own, the reference
    ok = ~np.isnan(ref[0])
    np.testing.assert_allclose(whole[0][ok], ref[0][ok], rtol=1e-12)
    np.testing.assert_allclose(whole[1][ok], ref[1][ok], rtol=1e-12)
    assert whole[2][1, 2] == 0
