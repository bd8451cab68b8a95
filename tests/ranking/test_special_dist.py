"""``ranking._special_dist``: scipy.stats' numbers from scipy.special alone.

The reference of every number is scipy.stats itself (imported here, never by the
report): each function must give the same value bit for bit (the same float64 bytes, NaN
where scipy gives NaN, the same kind of result: a numpy scalar for scalar input, an array
of the broadcast shape otherwise), over wide random ranges (hypothesis) and the edge
cases the call sites can meet (ties, n < 3, empty and constant samples, probabilities 0
and 1, counts outside the support, non-integral n). The last test runs ``annotate
report`` (text and ``--json``) on a small difficulty study in a fresh interpreter and
checks that scipy.stats is never imported while the replaced functions are used.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats
from sqlmodel import Session

from ranking import _special_dist as sd

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.filterwarnings("ignore")  # scipy warns where it returns NaN


def assert_same(got: Any, ref: Any) -> None:
    """The same result bit for bit: type, dtype, shape and bytes."""
    assert type(got) is type(ref), (type(got), type(ref))
    g, r = np.asarray(got), np.asarray(ref)
    assert g.dtype == r.dtype, (g.dtype, r.dtype)
    assert g.shape == r.shape, (g.shape, r.shape)
    assert g.tobytes() == r.tobytes(), (got, ref)


def reference(fn: Any, *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 40.0, -40.0, 1e300]
floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
wide = hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=6), elements=floats)


# --- the normal distribution ----------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(wide)
def test_norm_cdf_and_sf_match_scipy(x: Any) -> None:
    assert_same(sd.norm_cdf(x), stats.norm.cdf(x))
    assert_same(sd.norm_sf(x), stats.norm.sf(x))


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=6),
                  elements=st.one_of(st.floats(-0.5, 1.5), st.sampled_from(SPECIAL))))  # fmt: skip
def test_norm_ppf_matches_scipy(q: Any) -> None:
    assert_same(sd.norm_ppf(q), stats.norm.ppf(q))


@pytest.mark.parametrize("x", [*SPECIAL, 0.5, 2, 0, -3, 1 - 1e-16, 0.975, 1 - 0.05])
def test_norm_scalars_match_scipy(x: float) -> None:
    """Python scalars (the call sites' ``norm.ppf(1 - alpha)``): numpy scalars back."""
    for f, g in ((sd.norm_cdf, stats.norm.cdf), (sd.norm_sf, stats.norm.sf)):
        assert_same(f(x), g(x))
    assert_same(sd.norm_ppf(x), stats.norm.ppf(x))


def test_norm_grids_match_scipy() -> None:
    x = np.linspace(-40, 40, 200_001)
    assert_same(sd.norm_cdf(x), stats.norm.cdf(x))
    assert_same(sd.norm_sf(x), stats.norm.sf(x))
    q = np.r_[
        np.linspace(0, 1, 100_001), np.logspace(-320, -1, 2000), 1 - np.logspace(-17, -1, 500)
    ]
    assert_same(sd.norm_ppf(q), stats.norm.ppf(q))
    assert_same(sd.norm_ppf(q.astype(np.float32)), stats.norm.ppf(q.astype(np.float32)))
    i = np.arange(-5, 6)  # integer input: float64 out
    assert_same(sd.norm_cdf(i), stats.norm.cdf(i))
    assert_same(sd.norm_sf(i), stats.norm.sf(i))


# --- the binomial distribution --------------------------------------------------------

counts = st.one_of(
    st.integers(-5, 2_000_000),
    st.floats(-5, 2e6),
    st.sampled_from([np.nan, np.inf, -np.inf, 0.5, -0.0]),
)
sizes = st.one_of(st.integers(-2, 2_000_000), st.sampled_from([0.5, 3.25, np.nan, np.inf, 1e15]))
probs = st.one_of(st.floats(-0.1, 1.1), st.sampled_from([0.0, 1.0, 0.5, np.nan, 1e-300]))


@settings(max_examples=500, deadline=None)
@given(counts, sizes, probs)
def test_binom_scalars_match_scipy(k: Any, n: Any, p: Any) -> None:
    assert_same(sd.binom_cdf(k, n, p), reference(stats.binom.cdf, k, n, p))
    assert_same(sd.binom_sf(k, n, p), reference(stats.binom.sf, k, n, p))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_binom_arrays_match_scipy(data: st.DataObject) -> None:
    """Broadcast arrays as at the call sites: counts and sizes per annotator, ``p`` a
    scalar or an array; ``k`` near the support's ends."""
    m = data.draw(st.integers(0, 40))
    n = data.draw(hnp.arrays(np.int64, m, elements=st.integers(0, 5000)))
    k = n + data.draw(hnp.arrays(np.int64, m, elements=st.integers(-5002, 3)))
    p = data.draw(
        st.one_of(
            probs,
            hnp.arrays(np.float64, m, elements=st.one_of(st.floats(0, 1), st.just(1.0))),
        )
    )
    assert_same(sd.binom_cdf(k, n, p), reference(stats.binom.cdf, k, n, p))
    assert_same(sd.binom_sf(k, n, p), reference(stats.binom.sf, k, n, p))
    kf = k.astype(np.float64) + data.draw(st.sampled_from([0.0, 0.25, -0.5]))
    assert_same(sd.binom_cdf(kf, n, p), reference(stats.binom.cdf, kf, n, p))
    assert_same(sd.binom_sf(kf, n, p), reference(stats.binom.sf, kf, n, p))


def test_binom_grids_match_scipy() -> None:
    """Every k of n up to 300 at several p (both tails, the mode, the support's ends),
    a 2-D broadcast and the two-sided test of the call sites."""
    n = np.repeat(np.arange(0, 301), 305)
    k = np.tile(np.arange(-2, 303), 301)
    for p in (0.5, 0.0, 1.0, 0.3, 1e-9, 1 - 1e-9, 0.999):
        assert_same(sd.binom_cdf(k, n, p), stats.binom.cdf(k, n, p))
        assert_same(sd.binom_sf(k - 1, n, p), stats.binom.sf(k - 1, n, p))
    kk, nn, pp = np.arange(12)[:, None], np.arange(10)[None, :], np.linspace(0, 1, 10)
    assert_same(sd.binom_cdf(kk, nn, pp), stats.binom.cdf(kk, nn, pp))
    assert_same(sd.binom_sf(kk, nn, pp), stats.binom.sf(kk, nn, pp))
    big = np.array([10**6, 10**7, 10**9])
    assert_same(sd.binom_cdf(big // 2 - 100, big, 0.5), stats.binom.cdf(big // 2 - 100, big, 0.5))
    assert_same(sd.binom_cdf(3, 10, 0.5), stats.binom.cdf(3, 10, 0.5))  # numpy scalar


def test_binom_without_the_private_ufuncs_is_scipy_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scipy without ``_binom_cdf`` / ``_binom_sf`` gets scipy.stats' own binomial."""
    monkeypatch.setattr(sd, "_binom_cdf", None)
    monkeypatch.setattr(sd, "_binom_sf", None)
    k, n = np.arange(-1, 12), np.full(13, 10)
    assert_same(sd.binom_cdf(k, n, 0.3), stats.binom.cdf(k, n, 0.3))
    assert_same(sd.binom_sf(k, n, 0.3), stats.binom.sf(k, n, 0.3))


# --- the non-central chi-square quantile ----------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.floats(-0.1, 1.1), st.sampled_from([0.0, 1.0, 0.95, 0.99, np.nan])),
    st.one_of(st.floats(0, 50), st.sampled_from([1, 1.0, 0.0, -1.0, np.inf, np.nan])),
    hnp.arrays(np.float64, st.integers(0, 8), elements=st.one_of(
        st.floats(0, 1e4), st.sampled_from([0.0, 1e-12, -1.0, np.inf, np.nan]))),
)  # fmt: skip
def test_ncx2_ppf_matches_scipy(q: float, df: float, nc: Any) -> None:
    assert_same(sd.ncx2_ppf(q, df, nc), reference(stats.ncx2.ppf, q, df, nc))
    if nc.size:
        assert_same(sd.ncx2_ppf(q, df, nc[0]), reference(stats.ncx2.ppf, q, df, nc[0]))


def test_ncx2_ppf_call_site_grid_matches_scipy() -> None:
    """As the bias-aware Wald intervals call it: 1 degree of freedom, ``max(t**2, 1e-12)``."""
    t = np.r_[0.0, np.logspace(-8, 3, 4000)]
    for conf in (0.9, 0.95, 0.99):
        nc = np.maximum(t * t, 1e-12)
        assert_same(sd.ncx2_ppf(conf, 1, nc), stats.ncx2.ppf(conf, 1, nc))
    q = np.linspace(0, 1, 101)[:, None]
    assert_same(sd.ncx2_ppf(q, 2.5, [0.0, 3.0]), stats.ncx2.ppf(q, 2.5, [0.0, 3.0]))


# --- ranks and rank correlations ------------------------------------------------------


def same_correlation(got: sd.RankCorrelation, ref: Any) -> None:
    assert_same(got.statistic, ref.statistic)
    assert_same(got.pvalue, ref.pvalue)


values = st.one_of(
    st.integers(0, 3).map(float),  # many ties
    st.floats(-1e6, 1e6),
    st.sampled_from([0.0, -0.0, np.inf, -np.inf, 1e-300]),
)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 60).flatmap(lambda n: st.tuples(
    hnp.arrays(np.float64, n, elements=values), hnp.arrays(np.float64, n, elements=values)))
)  # fmt: skip
def test_rank_correlations_match_scipy(xy: tuple[Any, Any]) -> None:
    x, y = xy
    same_correlation(sd.spearmanr(x, y), reference(stats.spearmanr, x, y))
    same_correlation(sd.kendalltau(x, y), reference(stats.kendalltau, x, y))
    assert_same(sd.rankdata(x), stats.rankdata(x))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 8, 9, 33, 34, 35, 170, 171, 172, 250, 2000])
def test_rank_correlations_every_branch(n: int, seed: int) -> None:
    """Every branch of kendalltau's p: exact (no ties, n <= 33 or at most one pair out
    of order, n below and above 171), asymptotic with and without ties; Spearman's t
    p-value; constant samples; a NaN; negative zeros tied with zeros."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    cases = [
        (x, rng.normal(size=n)),  # no ties
        (x, x + rng.normal(size=n) * 0.3),
        (x, np.sort(x)),  # sorted: none or one pair out of order (below)
        (np.sort(x), np.sort(x)[::-1]),
        (np.round(x * 2), rng.integers(0, 4, n).astype(float)),  # ties in both
        (x, rng.integers(0, 2, n).astype(float)),
        (np.ones(n), x),  # constant
        (x, np.where(np.arange(n) == n // 2, np.nan, x)),  # a NaN
        (np.where(x > 0, 0.0, -0.0), x),  # signed zeros, one value
    ]
    if n >= 2:
        s = np.sort(x)
        s[[0, 1]] = s[[1, 0]]
        cases.append((np.sort(x), s))  # exactly one pair out of order
    for a, b in cases:
        same_correlation(sd.spearmanr(a, b), reference(stats.spearmanr, a, b))
        same_correlation(sd.kendalltau(a, b), reference(stats.kendalltau, a, b))
        same_correlation(sd.kendalltau(b, a), reference(stats.kendalltau, b, a))
        assert_same(sd.rankdata(a), stats.rankdata(a))


def test_kendall_inversions_count_every_discordant_pair() -> None:
    """The count of discordant pairs (pairwise, or merged above 256 values) against the
    O(n^2) definition, with and without ties."""
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 3, 7, 64, 65, 256, 257, 300, 1000):
        for top in (max(n // 3, 1), n + 1):
            v = rng.integers(0, top, n)
            brute = int(sum((v[i] > v[i + 1 :]).sum() for i in range(n)))
            assert sd._inversions(v.astype(np.intp)) == brute


def test_rank_correlations_reject_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="one length"):
        sd.spearmanr([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="one length"):
        sd.kendalltau([1.0, 2.0], [1.0])


# --- annotate report never imports scipy.stats ----------------------------------------


def _study(root: Path, n_q: int = 40, n_pairs: int = 100, n_ann: int = 10) -> Path:
    """A small difficulty study: two subjects of linked questions, 8 models' responses,
    ``n_ann`` annotators voting by difficulty with noise, one at random, one always
    "first" (position bias), 3% skips."""
    from annotate.services.db import open_store
    from annotate.services.importing import import_paths
    from annotate.store import repo

    rng = np.random.default_rng(13)
    folder = root / "small"
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        'name = "small"\nkind = "difficulty"\ntitle = "Small"\n', encoding="utf-8"
    )
    subject = [f"s{i % 2}" for i in range(n_q)]
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n_q):
            fh.write(json.dumps({"id": f"q{i}", "subject": subject[i], "text": f"q {i}"}) + "\n")
    difficulty = rng.normal(size=n_q)
    groups = [np.arange(s, n_q, 2) for s in range(2)]
    pairs = [(int(a), int(b)) for g in groups for a, b in itertools.pairwise(g)]
    while len(pairs) < n_pairs:
        a, b = (int(v) for v in rng.choice(groups[len(pairs) % 2], 2, replace=False))
        if (a, b) not in pairs and (b, a) not in pairs:
            pairs.append((a, b))
    (folder / "pairs.csv").write_text(
        "pair_id,first,second\n" + "".join(f"p{k},q{a},q{b}\n" for k, (a, b) in enumerate(pairs)),
        encoding="utf-8",
    )
    ability = np.linspace(-1.5, 1.5, 8)
    solved = rng.random((n_q, 8)) < 1 / (1 + np.exp(-(ability[None, :] - difficulty[:, None])))
    lines = ["question_id,model,score"] + [
        f"q{i},M{j},{int(solved[i, j])}" for i in range(n_q) for j in range(8)
    ]
    (folder / "responses.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "models.csv").write_text(
        "model,pool\n" + "".join(f"M{j},{'ab'[j % 2]}\n" for j in range(8)), encoding="utf-8"
    )
    engine = open_store(root / "v.db")
    import_paths(engine, [folder])
    pa = np.array(pairs)
    gap = difficulty[pa[:, 0]] - difficulty[pa[:, 1]]
    with Session(engine) as s, s.begin():
        study = repo.get_study(s, "small")
        assert study is not None
        items = repo.item_ids(s, study.id)
        rows = []
        for a in range(n_ann):
            aid = repo.annotator_id(s, f"V{a + 1}")
            p_first = 1 / (1 + np.exp(-rng.uniform(0.5, 3.0) * gap))
            if a == 0:
                p_first = np.full(len(pairs), 0.5)  # at random
            first = rng.random(len(pairs)) < p_first
            if a == 1:
                first[:] = True  # always the first
            skip = rng.random(len(pairs)) < 0.03
            for k in range(len(pairs)):
                choice = "skip" if skip[k] else ("first" if first[k] else "second")
                rows.append((str(uuid.uuid4()), study.id, aid, items[f"p{k}"], choice, False,
                             2500, False, "2026-01-01 00:00:00", None))  # fmt: skip
        repo.bulk_insert_votes(s, rows)
    engine.dispose()
    return root / "v.db"


_WATCH = """
import os, sys, traceback
LOG = os.environ["SPECIAL_DIST_LOG"]
def note(line):
    with open(LOG, "a", encoding="utf-8") as fh:
        fh.write(line + "\\n")
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "scipy.stats" or name.startswith("scipy.stats."):
            note("IMPORTED " + name + " " + repr("".join(traceback.format_stack(limit=12))))
        return None
sys.meta_path.insert(0, Watch())
import ranking._special_dist as sd
def wrap(name):
    f = getattr(sd, name)
    def g(*a, **k):
        note("CALLED " + name)
        return f(*a, **k)
    setattr(sd, name, g)
for name in ("norm_cdf", "norm_sf", "norm_ppf", "binom_cdf", "binom_sf", "ncx2_ppf",
             "spearmanr", "kendalltau", "rankdata"):
    wrap(name)
from annotate.__main__ import main
sys.argv = ["annotate", *sys.argv[1:]]
main()
"""


def test_annotate_report_never_imports_scipy_stats(tmp_path: Path) -> None:
    """``annotate report`` (text, ``--json``, and with its plots) on a small difficulty
    study, as a user runs it: scipy.stats is never imported (an import hook logs any
    import of it with the stack), while the report calls this module's functions in its
    place."""
    db = _study(tmp_path)
    log = tmp_path / "log.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPECIAL_DIST_LOG": str(log)}
    for k, mode in enumerate((["--no-plots"], ["--no-plots", "--json"], [])):
        out = tmp_path / f"out{k}"
        args = ["--db", str(db), "report", "--study", "small", "--out", str(out)]
        run = subprocess.run(
            [sys.executable, "-P", "-c", _WATCH, *args, "--boot", "20", *mode],
            capture_output=True,
            env=env,
            cwd=tmp_path,
            check=False,
        )
        assert run.returncode == 0, run.stderr.decode()
        assert any(out.iterdir())
    lines = log.read_text(encoding="utf-8").splitlines()
    imported = [line for line in lines if line.startswith("IMPORTED")]
    assert not imported, "\n".join(eval(line.split(" ", 2)[2]) for line in imported[:1])
    called = {line.split()[1] for line in lines if line.startswith("CALLED")}
    # every one: the verdicts' tests, flags and intervals, the proportions' intervals,
    # the rank correlations, the plots' percentile ranks
    assert called == {
        "norm_cdf", "norm_sf", "norm_ppf", "binom_cdf", "binom_sf", "ncx2_ppf",
        "spearmanr", "kendalltau", "rankdata",
    }, called  # fmt: skip
    assert any(p.suffix == ".png" for p in (tmp_path / "out2").rglob("*")), "no plot drawn"
