""":func:`annotate.services.json_ready.float_reprs` gives exactly ``float.__repr__``'s
strings (the reference: Python's own shortest round-trip repr), through pyarrow's cast on
long arrays (issue 13: the 500,500 texts of a 1,000-annotator pairwise kappa table, written
to pairwise_kappa.csv and ``--json``)."""

from __future__ import annotations

import numpy as np
import pytest

from annotate.services import json_ready
from annotate.services.json_ready import float_reprs, symmetric_texts, warm_float_reprs

SPECIAL = [
    0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1 / 3, 2.0 / 3.0, 1e-4, -1e-4, 9.999999999999999e-05,
    1.0000000000000001e-4, 1e-5, 1.5e-5, 5e-324, -5e-324, 2.2250738585072014e-308,
    1e15, 1e16, 9999999999999998.0, 1e16 + 2, 123456789012345.6, 4906863383089.852,
    1e22, 1.7976931348623157e308, -1.7976931348623157e308, float("inf"), float("-inf"),
    float("nan"), 100.0, 1234567.0, 0.30000000000000004,
]  # fmt: skip


def _values(n: int, seed: int) -> np.ndarray:
    """Doubles of every kind: random bit patterns (every exponent, NaN, infinities,
    subnormals), magnitudes from 1e-6 to 1e18, decimals rounded to 1-16 places, ratios of
    integers (kappa-like values), and the special values above."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64, endpoint=True)
    scaled = np.sign(rng.uniform(-1, 1, n)) * rng.uniform(1, 10, n) * 10.0 ** rng.uniform(-6, 18, n)
    rounded = np.round(rng.uniform(-1, 1, n), rng.integers(1, 17))
    ratios = rng.integers(-(10**6), 10**6, n).astype(np.float64) / rng.integers(1, 10**6, n)
    return np.concatenate([bits.view(np.float64), scaled, rounded, ratios, SPECIAL])


@pytest.mark.parametrize("seed", [0, 1])
def test_float_reprs_are_pythons_repr(seed: int) -> None:
    v = _values(60_000, seed)
    assert v.size >= json_ready.ARROW_MIN  # the pyarrow pass
    assert float_reprs(v) == list(map(float.__repr__, v.tolist()))


def test_short_arrays_and_other_shapes() -> None:
    v = np.array(SPECIAL)
    assert float_reprs(v) == list(map(float.__repr__, SPECIAL))  # below ARROW_MIN
    m = _values(30_000, 2).reshape(-1, 2)
    assert float_reprs(m) == list(map(float.__repr__, m.ravel().tolist()))  # flattened
    assert float_reprs(np.zeros(0)) == []


def test_the_kappa_texts_use_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`symmetric_texts` with ``float.__repr__`` on a symmetric matrix of kappa-like
    values (and a few others): every cell's repr, with the vectorised pass forced on."""
    monkeypatch.setattr(json_ready, "ARROW_MIN", 1)
    rng = np.random.default_rng(3)
    n = 40
    raw, places = rng.uniform(-0.2, 1, (n, n)), rng.integers(1, 17, (n, n))
    a = np.array(
        [
            [round(x, p) for x, p in zip(r, q, strict=True)]
            for r, q in zip(raw.tolist(), places.tolist(), strict=True)
        ]
    )
    a[0, 1], a[2, 3], a[4, 5] = 1e-5, 0.0, -0.0
    a = np.triu(a) + np.triu(a, 1).T
    np.fill_diagonal(a, 1.0)
    rows = a.tolist()
    assert symmetric_texts(rows, float.__repr__) == [[repr(x) for x in r] for r in rows]


def test_warm_up() -> None:
    warm_float_reprs()  # imports pyarrow and casts once; nothing else changes
    assert float_reprs(np.array([1.0, 0.25])) == ["1.0", "0.25"]


def test_pandas_is_not_imported() -> None:
    """pyarrow imports pandas (0.1-0.25 s) for ``pa.array``, ``pa.scalar`` and
    ``to_numpy``; float_reprs uses none of them (a fresh process: pandas may be imported
    here already)."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from annotate.services.json_ready import ARROW_MIN, float_reprs\n"
        "v = np.random.default_rng(0).random(ARROW_MIN); v[:3] = (1e20, 2.0, 1e-7)\n"
        "assert float_reprs(v) == list(map(float.__repr__, v.tolist()))\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert run.returncode == 0, run.stderr.decode()
