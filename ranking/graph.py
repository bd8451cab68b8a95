"""Comparison graphs: which items are linked, directly or through others, by comparisons.

A set of pairwise comparisons (battles between models, or votes on pairs of
questions) is an undirected graph on the items. Ratings fitted on one connected
component are not comparable with ratings fitted on another, so callers fit each
component on its own.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse import csgraph

from ranking._validation import as_index_array, check_same_length
from ranking.errors import InvalidParameterError, ShapeError
from ranking.types import IntArray

__all__ = ["component_members", "connected_components"]


def connected_components(a: npt.ArrayLike, b: npt.ArrayLike, n: int) -> IntArray:
    """Connected component of each item in the graph of comparisons ``a[i]`` - ``b[i]``.

    Parameters
    ----------
    a, b : array-like of int of shape (n_comparisons,)
        The two items of each comparison, indices in ``[0, n)``. Repeated
        comparisons and self-comparisons are allowed (a self-comparison marks its
        item as compared).
    n : int
        Number of items.

    Returns
    -------
    ndarray of int64 of shape (n,)
        The component of each item, numbered from 0: component 0 has the most
        items, ties broken by the smallest item index; ``-1`` for an item in no
        comparison.

    Raises
    ------
    LengthMismatchError
        If ``a`` and ``b`` have different lengths.
    InvalidParameterError
        If ``n`` is negative or an index is outside ``[0, n)``.

    References
    ----------
    R. Tarjan (1972), Depth-first search and linear graph algorithms, SIAM J. Comput.
    1(2), as implemented by :func:`scipy.sparse.csgraph.connected_components`.

    Examples
    --------
    Items 0-1-2 are linked, 3-4 are linked, 5 is never compared:

    >>> from ranking.graph import connected_components
    >>> connected_components([0, 1, 4], [1, 2, 3], 6).tolist()
    [0, 0, 0, 1, 1, -1]
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise InvalidParameterError(f"n must be a non-negative integer, got {n!r}")
    n = int(n)
    ia = as_index_array(a, "a", n=n)
    ib = as_index_array(b, "b", n=n)
    check_same_length(a=ia, b=ib)
    seen = np.zeros(n, dtype=bool)
    seen[ia] = True
    seen[ib] = True
    if not seen.any():
        return np.full(n, -1, dtype=np.int64)
    graph = sparse.coo_matrix((np.ones(ia.size), (ia, ib)), shape=(n, n))
    _, raw = csgraph.connected_components(graph, directed=False)
    raw = np.where(seen, raw, -1).astype(np.int64)
    ids, first, sizes = np.unique(raw[seen], return_index=True, return_counts=True)
    first = np.flatnonzero(seen)[first]  # smallest item of each component
    order = np.lexsort((first, -sizes))  # most items first, then smallest item
    remap = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
    remap[ids[order]] = np.arange(ids.size)
    return np.where(seen, remap[np.maximum(raw, 0)], -1).astype(np.int64)


def component_members(labels: npt.ArrayLike) -> list[IntArray]:
    """The items of each component, from the labels of :func:`connected_components`.

    Parameters
    ----------
    labels : array-like of int of shape (n,)
        Component of each item, ``-1`` for items in no component.

    Returns
    -------
    list of ndarray of int64
        ``members[c]`` holds the items of component ``c`` in increasing order.

    Raises
    ------
    ShapeError
        If ``labels`` is not 1-D.

    Examples
    --------
    >>> from ranking.graph import component_members
    >>> [m.tolist() for m in component_members([0, 0, 0, 1, 1, -1])]
    [[0, 1, 2], [3, 4]]
    """
    lab = np.asarray(labels, dtype=np.int64)
    if lab.ndim != 1:
        raise ShapeError(f"labels must be 1-D, got {lab.ndim} dimension(s)")
    used = np.flatnonzero(lab >= 0)
    if used.size == 0:
        return []
    order = used[np.argsort(lab[used], kind="stable")]
    cuts = np.flatnonzero(np.diff(lab[order])) + 1
    return [np.asarray(p, dtype=np.int64) for p in np.split(order, cuts)]
