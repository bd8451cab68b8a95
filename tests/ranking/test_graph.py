"""Tests for ranking.graph (connected components of a comparison graph).

The reference is a plain union-find written here, and closed forms (a path, a
cycle, disjoint pairs).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ranking.errors import InvalidParameterError, LengthMismatchError, ShapeError
from ranking.graph import component_members, connected_components


def union_find_groups(a: list[int], b: list[int], n: int) -> list[list[int]]:
    """Components by union-find, largest first then by smallest item (the documented order)."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    seen: set[int] = set()
    for x, y in zip(a, b, strict=True):
        seen.update((x, y))
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[rx] = ry
    groups: dict[int, list[int]] = {}
    for i in sorted(seen):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def test_closed_forms() -> None:
    # a path links everything; a cycle too; disjoint pairs are their own components
    assert connected_components([0, 1, 2, 3], [1, 2, 3, 4], 5).tolist() == [0] * 5
    assert connected_components([0, 1, 2], [1, 2, 0], 3).tolist() == [0, 0, 0]
    assert connected_components([0, 2, 4], [1, 3, 5], 6).tolist() == [0, 0, 1, 1, 2, 2]
    # the larger component is numbered first whatever the item order
    assert connected_components([0, 2, 3], [1, 3, 4], 5).tolist() == [1, 1, 0, 0, 0]
    # an item never compared is -1; a self-comparison marks the item as compared
    assert connected_components([1], [1], 3).tolist() == [-1, 0, -1]
    assert connected_components([], [], 3).tolist() == [-1, -1, -1]
    assert connected_components([], [], 0).tolist() == []


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 25).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40),
        )
    )
)
def test_matches_union_find(case: tuple[int, list[tuple[int, int]]]) -> None:
    n, edges = case
    a = [x for x, _ in edges]
    b = [y for _, y in edges]
    labels = connected_components(a, b, n)
    expected = union_find_groups(a, b, n)
    assert [m.tolist() for m in component_members(labels)] == expected
    compared = {i for e in edges for i in e}
    assert {i for i in range(n) if labels[i] < 0} == set(range(n)) - compared
    # invariant to the order and the direction of the comparisons
    rng = np.random.default_rng(len(edges))
    perm = rng.permutation(len(edges))
    ia, ib = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    swapped = connected_components(ib[perm], ia[perm], n)
    np.testing.assert_array_equal(swapped, labels)


def test_malformed_input_raises_named_errors() -> None:
    with pytest.raises(LengthMismatchError):
        connected_components([0, 1], [1], 2)
    with pytest.raises(InvalidParameterError, match="only 2 items"):
        connected_components([0], [2], 2)
    with pytest.raises(InvalidParameterError, match="negative"):
        connected_components([-1], [0], 2)
    with pytest.raises(InvalidParameterError, match="n must be"):
        connected_components([0], [1], -1)
    with pytest.raises(ShapeError):
        component_members([[0, 1]])
