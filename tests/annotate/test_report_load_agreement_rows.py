"""Session 14's shortcuts in the report's stages against what they replace: ``report._vote_columns``
(the votes straight from the monitor's rows) against ``arrays_from_codes`` and the mapping of
its items to pairs that ``_load_votes`` used (copied below as the reference), and
``report._float_rows`` against ``tuple(map(tuple, m.tolist()))``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.services.arrays import arrays_from_codes
from annotate.services.report import _vote_columns
from ranking.alignment import FIRST_HARDER, SECOND_HARDER, SKIP


def _reference(raw, names, items, pair_keys):
    """``_load_votes`` before session 14 (its monitor path)."""
    va = arrays_from_codes("s", "difficulty", items, raw, names)
    pi = {k: i for i, k in enumerate(pair_keys)}
    item_to_pair = np.array([pi.get(k, -1) for k in va.item_keys], dtype=np.int64)
    vp = item_to_pair[va.item] if len(va) else np.zeros(0, np.int64)
    keep = vp >= 0
    codes = va.choice.astype(np.int64)
    keep &= np.isin(codes, (SKIP, FIRST_HARDER, SECOND_HARDER))
    return vp[keep], va.annotator[keep], codes[keep], list(va.annotators)


def _same(got, want):
    for g, w in zip(got[:3], want[:3], strict=True):
        assert g.dtype == w.dtype == np.int64
        assert g.tolist() == w.tolist()
    assert got[3] == want[3]


@st.composite
def _votes(draw):
    n_items = draw(st.integers(1, 8))
    item_ids = draw(st.lists(st.integers(1, 40), min_size=n_items, max_size=n_items, unique=True))
    items = [(i, f"k{i}") for i in item_ids]
    # some items are pairs, some keys are pairs of no item
    pair_keys = [k for _, k in items if draw(st.booleans())] + ["other"]
    big = draw(st.booleans())  # annotator ids too large to count: np.unique
    ann_pool = draw(
        st.lists(st.integers(0, 10**9 if big else 30), min_size=1, max_size=6, unique=True)
    )
    n = draw(st.integers(0, 40))
    rows = []
    for _ in range(n):
        item = draw(st.sampled_from([*item_ids, 0]))  # 0: an id of no item (lookup 0)
        code = draw(st.sampled_from([0, 1, 2, 3, -1, 257, 258]))
        rows.append((item, draw(st.sampled_from(ann_pool)), code, 0, -1, 0))
    raw = np.array(rows, dtype=np.int64).reshape(-1, 6)
    if draw(st.booleans()):  # a strided view, as the monitor gives it
        wide = np.zeros((raw.shape[0], 8), dtype=np.int64)
        wide[:, 1:7] = raw
        raw = wide[:, 1:7]
    names = {a: f"a{a}" for a in ann_pool}
    return raw, names, items, pair_keys


@settings(max_examples=300, deadline=None)
@given(_votes())
def test_vote_columns_as_arrays_from_codes(case):
    raw, names, items, pair_keys = case
    _same(_vote_columns(raw, names, items, pair_keys), _reference(raw, names, items, pair_keys))


def test_vote_columns_large():
    rng = np.random.default_rng(3)
    items = [(i, f"k{i}") for i in rng.permutation(np.arange(1, 3001))[:2000].tolist()]
    pair_keys = [k for _, k in items[::2]]
    ids = rng.choice(np.arange(5, 1500, 3), size=400, replace=False)
    raw = np.zeros((50_000, 6), dtype=np.int64)
    raw[:, 0] = rng.choice([i for i, _ in items], size=raw.shape[0])
    raw[:, 1] = rng.choice(ids, size=raw.shape[0])
    raw[:, 2] = rng.integers(0, 3, size=raw.shape[0])
    names = {int(a): f"a{a}" for a in ids}
    _same(_vote_columns(raw, names, items, pair_keys), _reference(raw, names, items, pair_keys))


# ``report._float_rows`` (the pairwise kappa table's Python floats, from the array's bytes)
# against ``tuple(map(tuple, m.tolist()))``, which the report used before (session 14).


def _float_bits(rows):
    return [[(type(x).__name__, np.float64(x).tobytes()) for x in r] for r in rows]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 7).flatmap(
        lambda n: st.lists(
            st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
            min_size=n * n,
            max_size=n * n,
        ).map(lambda v: np.array(v, dtype=np.float64).reshape(n, n))
    )
)
def test_float_rows_as_tolist(m):
    from annotate.services.report import _float_rows

    got, want = _float_rows(m), tuple(map(tuple, m.tolist()))
    assert type(got) is tuple
    assert all(type(r) is tuple for r in got)
    assert _float_bits(got) == _float_bits(want)  # every float's 64 bits (-0.0, NaN)
    # a non-contiguous view gives the same
    assert _float_bits(_float_rows(m.T)) == _float_bits(tuple(map(tuple, m.T.tolist())))


def test_a_vote_on_an_item_beyond_the_studys_items_is_no_error():
    """A vote whose item id exceeds every item of the study (a database edited by hand)
    is mapped as a vote on an unknown item id below them is (arrays_from_codes' lookup:
    the first item's pair), not an IndexError; before, the lookup table ended at the
    largest item id."""
    items = [(3, "k3"), (5, "k5")]
    names = {1: "a1", 2: "a2"}
    above = np.array([[3, 1, 1, 0, -1, 0], [99, 1, 2, 0, -1, 0], [5, 2, 0, 0, -1, 0]], np.int64)
    below = above.copy()
    below[1, 0] = 4  # an unknown id inside the table
    got = _vote_columns(above, names, items, ["k3", "k5"])
    _same(got, _vote_columns(below, names, items, ["k3", "k5"]))
    _same(got, _reference(below, names, items, ["k3", "k5"]))
