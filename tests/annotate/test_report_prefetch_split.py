"""The prefetch child reads a study's rows in two halves side by side, the later half in a
helper process of its own (:class:`annotate.services.report_prefetch.Helper`,
:func:`annotate.services.monitor_rows.child_read`; issue 13).

The reference is the monitor's own read of every row (as in test_report_prefetch.py): the
rows, the current votes and the snapshot must be exactly equal, with the split forced on
(``SPLIT_MIN_IDS = 1``), with a helper that fails, and with votes cast after the read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine
from sqlmodel import Session

import annotate.services.monitor_rows as monitor_rows
from annotate.services import vote_cache
from annotate.store import repo
from tests.annotate import test_report_prefetch as tp
from tests.annotate.test_report import cast
from tests.annotate.test_report_prefetch import STUDY, _compare, _started, _study_id

engine = tp.engine  # the fixtures of test_report_prefetch.py
_single_thread = tp._single_thread


@pytest.fixture(autouse=True)
def _split_always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(monitor_rows, "SPLIT_MIN_IDS", 1)


def _marked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A file the child appends to each time it splits its read (it is another process)."""
    mark = tmp_path / "splits"
    real = monitor_rows._split_read

    def split(*a: Any) -> Any:
        out = real(*a)
        with mark.open("a") as f:
            f.write(f"{out is not None}\n")
        return out

    monkeypatch.setattr(monitor_rows, "_split_read", split)
    return mark


@pytest.mark.parametrize("cache", ["off", "on"])
def test_split_rows_equal_the_monitors_own_read(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cache: str
) -> None:
    monkeypatch.setattr(vote_cache, "MIN_ROWS", 1)
    if cache == "off":
        monkeypatch.setenv(vote_cache.ENV, "off")
    mark = _marked(monkeypatch, tmp_path)
    cast(engine, STUDY, {"A4": {"p1": "first", "p2": "second", "p5": "skip"}})
    _compare(engine, _started(engine))
    assert mark.read_text().split() == ["True"]  # split in two
    if cache == "on":  # the rows after the cache file's, split
        cast(engine, STUDY, {"A5": {"p1": "second", "p3": "first"}})
        _compare(engine, _started(engine))


def test_a_failed_helper_leaves_its_half_to_the_child(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(vote_cache.ENV, "off")

    def broken(*_: Any) -> None:
        raise RuntimeError("no database")

    monkeypatch.setattr(monitor_rows, "tail_read", broken)
    mark = _marked(monkeypatch, tmp_path)
    p = _started(engine)
    got = p.take(_study_id(engine))
    assert got is not None
    assert mark.read_text().split() == ["True"]
    _compare(engine, _started(engine))


class _Tail:
    """A :class:`monitor_rows.TailReader` in this process: reads when taken, or fails."""

    def __init__(self, path: Path, *, fail: bool = False, refuse: bool = False) -> None:
        self.path, self.fail, self.refuse = path, fail, refuse
        self.asked: tuple[int, int] | None = None

    def ask(self, study_id: int, after: int) -> bool:
        self.asked = (study_id, after)
        return not self.refuse

    def take(self) -> Any:
        assert self.asked is not None
        return None if self.fail else monitor_rows.tail_read(self.path, *self.asked)


@pytest.mark.parametrize("how", ["ok", "fail", "refuse"])
def test_split_read_in_process(engine: Engine, how: str) -> None:
    """:func:`monitor_rows._split_read` gives :func:`monitor_rows.read_rows`'s rows, after
    nothing and after earlier rows (a cache file's), with a tail reader that reads, fails
    or cannot start (then None: the caller reads at once)."""
    path = Path(str(engine.url.database))
    with Session(engine) as s:
        st = repo.get_study(s, STUDY)
        assert st is not None
        ref, n_ref = monitor_rows.read_rows(s, st.id, 0)
        assert ref is not None
        for cached in (None, ref[:3]):
            tail = _Tail(path, fail=how == "fail", refuse=how == "refuse")
            got = monitor_rows._split_read(s, st.id, cached, tail)
            if how == "refuse":
                assert got is None
                continue
            assert got is not None
            rows, n_db = got
            assert tail.asked is not None
            assert 0 < tail.asked[1] < int(ref[-1, 0])  # a split inside the span
            assert rows is not None
            assert np.array_equal(rows, ref)
            assert n_db == n_ref - (0 if cached is None else 3)
