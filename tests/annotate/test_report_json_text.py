"""``indented_json`` writes exactly what ``json.dumps(indent=2, ensure_ascii=False,
allow_nan=False, default=str)`` writes (the reference is the standard library itself), and
``json_ready``'s fast path for lists of plain numbers returns what its item-by-item walk
returns. ``annotate report --json`` prints through them (issue 13: a 1,000-annotator study
has a million pairwise-kappa cells)."""

from __future__ import annotations

import json
import random
from enum import IntEnum
from typing import Any

import numpy as np
import pytest

from annotate.services.json_ready import indented_json, json_ready


def _reference(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False, default=str)


class _Str(str):
    pass


class _Float(float):
    pass


class _Int(int):
    pass


class _Enum(IntEnum):
    A = 3


_SCALARS: list[Any] = [
    None, True, False, 0, -5, 10**30, 2**63, 1.5, -0.0, 0.0, 1e300, 5e-324, 3.0, "x", "",
    "é\x1b[31m\u202e\ud800\x7f", _Str("s"), _Float(2.5), _Int(7), _Enum.A, np.float64(0.1),
    np.int64(3), np.bool_(True), object, (1, 2), [], {},
]  # fmt: skip


def _random_doc(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 3 or r < 0.45:
        return rng.choice(_SCALARS)
    if r < 0.75:
        k = rng.randint(0, 5)
        kind = rng.random()
        if kind < 0.2:
            return [rng.uniform(-1, 1) for _ in range(k)]
        if kind < 0.35:
            return [rng.randint(-9, 9) for _ in range(k)]
        if kind < 0.5:
            return tuple(rng.choice([None, 1.25, -0.0]) for _ in range(k))
        if kind < 0.6:
            return [rng.choice([True, 1, None, 0]) for _ in range(k)]
        return [_random_doc(rng, depth + 1) for _ in range(k)]
    keys: list[Any] = ["a", "b\n", 1, 2.5, True, None, False, "é", _Str("k")]
    return {rng.choice(keys): _random_doc(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_indented_json_equals_the_standard_encoder_on_random_documents() -> None:
    rng = random.Random(13)
    for _ in range(5000):
        doc = _random_doc(rng)
        assert indented_json(doc) == _reference(doc)


def test_indented_json_on_a_large_matrix_with_nulls() -> None:
    rng = np.random.default_rng(0)
    m = rng.normal(size=(50, 60)).tolist()
    for i in range(50):
        m[i][i % 60] = None
    doc = {"kappa": m, "overlap": rng.integers(0, 999, size=(50, 60)).tolist(), "mean": 0.25}
    assert indented_json(doc) == _reference(doc)


@pytest.mark.parametrize(
    "bad",
    [float("nan"), [1.0, float("inf")], {"a": [float("-inf"), None]}, {float("nan"): 1}, (-1e999,)],
)
def test_indented_json_refuses_non_finite_numbers_like_allow_nan_false(bad: Any) -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        _reference(bad)
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        indented_json(bad)


def _walk(obj: Any) -> Any:
    """json_ready item by item, without the fast path (its definition, written out)."""
    if isinstance(obj, dict):
        return json_ready(obj)
    if isinstance(obj, list | tuple):
        return [None if _non_finite(v) else json_ready(v) for v in obj]
    return json_ready(obj)


def _non_finite(v: Any) -> bool:
    return isinstance(v, float) and not np.isfinite(v)


@pytest.mark.parametrize(
    "seq",
    [
        [1.0, 2.5, None, -0.0],
        (1, True, None, 2**70),
        [1.0, float("nan")],
        [1.0, float("inf"), None],
        [np.float64(1.0), 2.0],
        [1, 2.0],
        [],
    ],
)
def test_json_ready_fast_path_returns_the_walk(seq: Any) -> None:
    got, want = json_ready(seq), _walk(seq)
    assert json.dumps(got) == json.dumps(want)
    assert [type(v) for v in got] == [type(v) for v in want]
