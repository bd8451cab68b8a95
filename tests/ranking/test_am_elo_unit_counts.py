"""am-ELO's triples with one vote each (``_Triples.unit_cnt``): the residuals and variances
skip their product with the counts (``x * 1.0`` is ``x``), and the fit is the same, bit for
bit, as with the products (the reference: the same fit with ``unit_cnt`` switched off)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ranking.pairwise as pw
from ranking import am_elo


def _votes(seed: int, n: int, m: int, size: int, repeat: bool):
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 1.0, n)
    disc = rng.lognormal(0.0, 0.5, m)
    if repeat:  # pairs drawn at random: some (pair, annotator) triples get several votes
        a = rng.integers(0, n, size)
        b = (a + rng.integers(1, n, size)) % n
        k = rng.integers(0, m, size)
    else:  # every annotator votes each pair once, as in a difficulty study
        lo, hi = np.triu_indices(n, 1)
        k = np.repeat(np.arange(m), lo.size)
        a, b = np.tile(lo, m), np.tile(hi, m)
        swap = rng.random(a.size) < 0.5
        a, b = np.where(swap, b, a), np.where(swap, a, b)
    p = 1.0 / (1.0 + np.exp(-disc[k] * (s[a] - s[b])))
    u = rng.random(a.size)
    w = np.where(u < 0.1, 0.5, (u < 0.1 + 0.9 * p).astype(np.float64))
    return a, b, k, w


def test_flag_set_exactly_when_every_triple_has_one_vote():
    for repeat, unit in ((False, True), (True, False)):
        a, b, k, w = _votes(1, 12, 30, 3000, repeat)
        tr = pw._aggregate_triples(a, b, k, w, 12, 30)
        assert tr.unit_cnt is unit
        assert tr.cnt is not None
        assert bool(np.all(tr.cnt == 1.0)) is unit


@pytest.mark.parametrize("prior", [None, 2.0])
def test_same_fit_bit_for_bit_without_the_shortcut(monkeypatch, prior):
    a, b, k, w = _votes(2, 15, 60, 0, False)
    kw = {"ability_prior_sd": prior, "information": "observed"}
    if prior is not None:
        kw["rating_prior_sd"] = 1000.0
    fast = am_elo(a, b, k, w, **kw)
    real = pw._aggregate_triples

    def without(*args):
        tr = real(*args)
        assert tr.unit_cnt
        return dataclasses.replace(tr, unit_cnt=False)

    monkeypatch.setattr(pw, "_aggregate_triples", without)
    slow = am_elo(a, b, k, w, **kw)
    for f in dataclasses.fields(fast):
        x, y = getattr(fast, f.name), getattr(slow, f.name)
        if isinstance(x, np.ndarray):
            assert x.tobytes() == y.tobytes(), f.name
        else:
            assert x == y, f.name
