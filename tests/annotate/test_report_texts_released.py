"""The pairwise-kappa matrix's texts (``symmetric_texts``; some 70 MB at 1,000 annotators)
are not kept after the report in a long-running process (issue 13): outside
``kept_texts`` nothing is kept, and a scope's kept result is let go at its end. Measured
with tracemalloc (the texts are Python strings and lists, all traced); the reference
values are the plain conversions ``[[text(v) for v in row] ...]``."""

from __future__ import annotations

import gc
import threading
import tracemalloc
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from annotate.services.json_ready import kept_texts, symmetric_texts


def _symmetric(n: int, seed: int = 0) -> list[list[float]]:
    a = np.random.default_rng(seed).normal(size=(n, n))
    return (np.triu(a) + np.triu(a, 1).T).tolist()


@pytest.fixture
def traced() -> Iterator[Callable[[], int]]:
    """Bytes traced now (after a full collection), from a tracemalloc started here."""
    tracemalloc.start()

    def now() -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    try:
        yield now
    finally:
        tracemalloc.stop()


def test_nothing_is_kept_outside_a_scope(traced: Callable[[], int]) -> None:
    m = _symmetric(400)
    base = traced()
    texts = symmetric_texts(m, float.__repr__)
    assert texts == [[float.__repr__(v) for v in row] for row in m]
    held = traced() - base
    assert held > 5_000_000  # 160,000 strings and 400 lists
    del texts
    assert traced() - base < held / 100
    again = symmetric_texts(m, float.__repr__)
    assert again == [[float.__repr__(v) for v in row] for row in m]


def test_a_scope_reuses_its_result_and_lets_it_go_at_the_end(
    traced: Callable[[], int],
) -> None:
    m = _symmetric(400, 1)
    base = traced()
    with kept_texts():
        first = symmetric_texts(m, float.__repr__)
        held = traced() - base
        assert symmetric_texts([list(r) for r in m], float.__repr__) is first  # the --json
        del first
        assert traced() - base > held * 0.9  # kept for a later call in the scope
    assert traced() - base < held / 100


def test_kept_results_follow_the_text_and_the_values() -> None:
    m = _symmetric(6, 2)
    other = [[v + 1.0 for v in row] for row in m]
    with kept_texts():
        for _ in range(2):  # the second round answers from the kept results where they match
            for rows in (m, other):
                for text in (float.__repr__, "{:.2f}".format, "{:.3f}".format):
                    assert symmetric_texts(rows, text) == [[text(v) for v in row] for row in rows]


def test_a_scope_is_per_thread() -> None:
    """A scope in one thread keeps nothing for another (the app's report worker)."""
    m = _symmetric(50, 3)
    seen: list[object] = []
    with kept_texts():
        kept = symmetric_texts(m, float.__repr__)
        worker = threading.Thread(target=lambda: seen.append(symmetric_texts(m, float.__repr__)))
        worker.start()
        worker.join()
        assert seen[0] == kept
        assert seen[0] is not kept
