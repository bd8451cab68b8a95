"""Tests for ranking.reliability: per-annotator signals from vote arrays.

Expected values: scipy.stats.binomtest for the position-bias p-values, slow
loop references written out below for the majority agreement and the rates,
hand-worked cases, and the LLMFAO crowd votes for the pipeline.
"""

from __future__ import annotations

import csv
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from ranking.errors import InvalidParameterError, LengthMismatchError, ShapeError
from ranking.reliability import (
    annotator_signals,
    majority_agreement,
    position_bias,
    too_fast_votes,
    vote_rates,
)
from tests.ranking.test_pairwise import llmfao


def test_too_fast_votes_floor():
    """Floor = min_seconds + length / chars_per_second, worked by hand."""
    res = too_fast_votes(
        [0, 0, 1, 1, 1],
        [5.0, 12.5, np.nan, 0.5, 100.0],
        [500, 500, 10, 10, 100],
        min_seconds=2.0,
        chars_per_second=50.0,
    )
    np.testing.assert_allclose(res.floor, [12.0, 12.0, 2.2, 2.2, 4.0])
    assert res.too_fast.tolist() == [True, False, False, True, False]
    assert res.n_timed.tolist() == [2, 2]
    assert res.share.tolist() == [0.5, 0.5]
    with pytest.raises(InvalidParameterError, match="response_time"):
        too_fast_votes([0], [-1.0], [10])
    with pytest.raises(LengthMismatchError):
        too_fast_votes([0, 1], [1.0], [10, 10])


@settings(max_examples=30, deadline=None)
@given(
    votes=st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0])), min_size=1, max_size=60
    )
)
def test_position_bias_matches_scipy_binomtest(votes):
    """Expected: scipy.stats.binomtest(n_left, n_decisive, 0.5) two-sided p-value."""
    k = np.array([v[0] for v in votes])
    w = np.array([v[1] for v in votes])
    res = position_bias(k, w, n_annotators=4)
    for j in range(4):
        dec = (k == j) & (w != 0.5)
        n, x = int(dec.sum()), int(((k == j) & (w == 1.0)).sum())
        assert res.n_decisive[j] == n
        assert res.n_left[j] == x
        if n == 0:
            assert res.left_share.mask[j]
            assert res.p_value.mask[j]
        else:
            assert res.left_share[j] == pytest.approx(x / n)
            assert res.p_value[j] == pytest.approx(binomtest(x, n, 0.5).pvalue, rel=1e-9)


def test_vote_rates_match_loop():
    """Expected: a direct loop over votes."""
    rng = np.random.default_rng(0)
    k = rng.integers(0, 5, 400)
    w = rng.choice([0.0, 0.5, 1.0], 400)
    bb = rng.random(400) < 0.1
    sk = rng.random(400) < 0.1
    res = vote_rates(k, w, both_bad=bb, skipped=sk)
    for j in range(5):
        sel = k == j
        used = sel & ~sk
        assert res.skip_rate[j] == pytest.approx(sk[sel].mean())
        assert res.tie_rate[j] == pytest.approx(np.mean((w == 0.5)[used] & ~bb[used]))
        assert res.both_bad_rate[j] == pytest.approx(bb[used].mean())
    assert res.n_votes.sum() == 400


def slow_majority(item, ann, lab):
    """Reference: for each vote, Counter of the other annotators' labels on the item."""
    agree, total = Counter(), Counter()
    for i, (it, a, lb) in enumerate(zip(item, ann, lab, strict=True)):
        others = Counter(lab[j] for j in range(len(item)) if item[j] == it and j != i)
        if not others:
            continue
        top = others.most_common()
        if len(top) > 1 and top[0][1] == top[1][1]:
            continue
        total[a] += 1
        agree[a] += int(top[0][0] == lb)
    return agree, total


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_majority_agreement_matches_slow_reference(seed):
    """Expected: slow_majority above (leave-one-out plurality, ties skipped)."""
    rng = np.random.default_rng(seed)
    pairs = [(i, a) for i in range(12) for a in range(6) if rng.random() < 0.6]
    item = np.array([p[0] for p in pairs], dtype=int)
    ann = np.array([p[1] for p in pairs], dtype=int)
    lab = rng.integers(0, 3, item.size)
    res = majority_agreement(item, ann, lab, n_annotators=6)
    agree, total = slow_majority(item.tolist(), ann.tolist(), lab.tolist())
    for a in range(6):
        assert res.n_compared[a] == total[a]
        if total[a]:
            assert res.agreement[a] == pytest.approx(agree[a] / total[a])
        else:
            assert res.agreement.mask[a]


def slow_chance(item, ann, lab):
    """Reference chance per annotator: over its compared votes (as slow_majority), the
    mean share of its own labels equal to the leave-one-out majority label."""
    chance, total = Counter(), Counter()
    for i, (it, a) in enumerate(zip(item, ann, strict=True)):
        others = Counter(lab[j] for j in range(len(item)) if item[j] == it and j != i)
        top = others.most_common()
        if not top or (len(top) > 1 and top[0][1] == top[1][1]):
            continue
        own = [lab[j] for j in range(len(item)) if ann[j] == a]
        chance[a] += own.count(top[0][0]) / len(own)
        total[a] += 1
    return {a: chance[a] / total[a] for a in total}


@pytest.mark.parametrize("top_label", [2, 700])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_majority_agreement_chance_matches_slow_reference(seed, top_label):
    """Expected: slow_majority and slow_chance above, vote by vote. Few labels take the
    counted (annotator, label, majority) table, a label of 700 the per-vote path."""
    rng = np.random.default_rng(seed)
    pairs = [(i, a) for i in range(15) for a in range(6) if rng.random() < 0.7]
    item = np.array([p[0] for p in pairs], dtype=int)
    ann = np.array([p[1] for p in pairs], dtype=int)
    lab = rng.choice([0, 1, top_label], size=item.size, p=[0.5, 0.3, 0.2])
    res = majority_agreement(item, ann, lab, n_annotators=7)  # annotator 6 never votes
    agree, total = slow_majority(item.tolist(), ann.tolist(), lab.tolist())
    chance = slow_chance(item.tolist(), ann.tolist(), lab.tolist())
    assert res.agreement.mask[6]
    assert res.chance.mask[6]
    assert res.n_compared[6] == 0
    for a in range(6):
        assert res.n_compared[a] == total[a]
        if total[a]:
            assert res.agreement[a] == agree[a] / total[a]
            assert res.chance[a] == pytest.approx(chance[a], rel=1e-12)
        else:
            assert res.agreement.mask[a]
            assert res.chance.mask[a]


def test_majority_agreement_rejects_double_votes():
    with pytest.raises(InvalidParameterError, match="voted 2 times on item 0"):
        majority_agreement([0, 0, 0], [1, 1, 2], [0, 1, 0])


def test_perfect_agreement_and_chance():
    """Three annotators always agree: agreement 1; chance = own frequency of the majority label."""
    item = np.repeat(np.arange(4), 3)
    ann = np.tile(np.arange(3), 4)
    lab = np.repeat([0, 0, 1, 2], 3)
    res = majority_agreement(item, ann, lab)
    np.testing.assert_allclose(res.agreement, 1.0)
    np.testing.assert_allclose(res.chance, (0.5 * 2 + 0.25 + 0.25) / 4)


def test_signals_bundle_and_validation():
    s = annotator_signals(
        [0, 0, 1, 1],
        [1, 0.5, 1, 1],
        item=[0, 1, 0, 1],
        response_time=[1, 20, 20, 20],
        text_length=[100, 100, 100, 100],
    )
    assert s.n_votes.tolist() == [2, 2]
    assert s.too_fast.share.tolist() == [0.5, 0.0]
    assert s.position.n_decisive.tolist() == [1, 2]
    with pytest.raises(InvalidParameterError, match="both response_time and text_length"):
        annotator_signals([0], [1], response_time=[3.0])
    with pytest.raises(InvalidParameterError, match="outcome"):
        annotator_signals([0], [0.3])
    with pytest.raises(ShapeError):
        vote_rates([0, 1], [1, 0], both_bad=[True])


@pytest.mark.shared_data
def test_llmfao_signals(shared_data, capsys):
    """LLMFAO crowd: left wins 2,911, right 2,549, ties 3,471 (SOURCE.md); per worker
    signals sum back to those counts. Majority agreement is computed per pair id."""
    d = llmfao(shared_data)
    with (d["folder"] / "crowd-comparisons.csv").open(newline="") as fh:
        pair_id = np.array([int(r["id"]) for r in csv.DictReader(fh)])
    s = annotator_signals(d["k"], d["w"], item=pair_id)
    assert s.position.n_left.sum() == 2911
    assert s.position.n_decisive.sum() == 2911 + 2549
    ties = np.round(s.rates.tie_rate.filled(0) * s.n_votes).sum()
    assert ties == 3471
    biased = np.flatnonzero(s.position.p_value.filled(1.0) < 0.01)
    with capsys.disabled():
        print(f"\nLLMFAO: {biased.size} workers with position-bias p < 0.01:")
        for j in biased[:10]:
            print(
                f"  worker {d['workers'][j]}: left share {s.position.left_share[j]:.2f} "
                f"of {s.position.n_decisive[j]} decisive, p = {s.position.p_value[j]:.2g}; "
                f"majority agreement {s.majority.agreement[j]:.2f} "
                f"(chance {s.majority.chance[j]:.2f})"
            )
    assert float(s.majority.agreement.mean()) > float(s.majority.chance.mean())


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers(1, 6), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_majority_agreement_finds_every_repeated_vote(n: int, n_items: int, m: int, seed: int):
    """Expected (np.unique on the (item, annotator) keys): an error exactly when a key
    repeats, naming the smallest repeated key and the largest repeat count."""
    rng = np.random.default_rng(seed)
    item = rng.integers(0, n_items, n)
    ann = rng.integers(0, m, n)
    lab = rng.integers(0, 3, n)
    keys, counts = np.unique(item * m + ann, return_counts=True)
    if counts.max() == 1:
        majority_agreement(item, ann, lab, n_annotators=m)
        return
    first = int(keys[counts > 1][0])
    expected = f"annotator {first % m} voted {int(counts.max())} times on item {first // m}"
    with pytest.raises(InvalidParameterError, match=expected):
        majority_agreement(item, ann, lab, n_annotators=m)
