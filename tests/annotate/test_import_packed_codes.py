"""Packed vote records carry ``choice`` as a digit and a missing ``response_ms`` as -1
(issue 13): the ``INSERT ... SELECT`` must store exactly the text of every choice of
``annotate.choices.Choice`` and NULL / 0 / the largest 18-digit time, with SQLite's
``typeof`` of each (the reference is the values themselves, bound by ``executemany``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlmodel import Session

from annotate.choices import Choice
from annotate.services import importing
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.store import repo

DATA = Path(__file__).resolve().parent.parent / "data"


def _record(k: int, choice: str, ms: int | None, item: int, ann: int) -> bytes:
    import numpy as np

    fields = {
        "uuid": f"00000000-0000-4000-8000-{k:012d}".encode(),
        "annotator_id": importing._digits([ann], 19).tobytes(),
        "item_id": importing._digits([item], 19).tobytes(),
        "choice": str(repo.PACKED_CHOICES.index(choice)).encode(),
        "swapped": b"1",
        "response_ms": repo.PACKED_NO_RESPONSE_MS
        if ms is None
        else importing._digits(np.array([ms]), 19).tobytes(),
        "fast": b"0",
        "created_at": b"2025-01-01 00:00:00".ljust(26),
        "supersedes": b" " * 36,
    }
    out = b"".join(fields[name] for name, _ in repo.PACKED_VOTE_LAYOUT)
    assert len(out) == repo.PACKED_VOTE_WIDTH
    return out


def test_every_choice_and_response_time_round_trips(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    engine = open_store(db)
    import_paths(engine, [DATA / "studies" / "tiny-arena"])
    con = sqlite3.connect(db)
    (sid,) = con.execute("SELECT id FROM study").fetchone()
    (item,) = con.execute("SELECT min(id) FROM item").fetchone()
    con.executemany(
        "INSERT INTO annotator (name, created_at) VALUES (?, '2025-01-01')",
        [(f"a{k}",) for k in range(len(Choice) * 3)],
    )
    con.commit()
    anns = [r[0] for r in con.execute("SELECT id FROM annotator ORDER BY id")]
    con.close()
    assert set(repo.PACKED_CHOICES) == {c.value for c in Choice}
    times = [None, 0, 10**18 - 1]
    # one chain root per annotator: (annotator, item) unique
    want = [(c.value, ms) for c in Choice for ms in times]
    data = b"".join(_record(k, c, ms, item, anns[k]) for k, (c, ms) in enumerate(want))
    with Session(engine) as s, s.begin():
        repo.bulk_insert_vote_batches(
            s, [repo.PackedVotes(sid, data, len(want))], expected=len(want)
        )
    engine.dispose()
    con = sqlite3.connect(db)
    got = con.execute(
        "SELECT choice, typeof(choice), response_ms, typeof(response_ms) FROM vote ORDER BY id"
    ).fetchall()
    con.close()
    assert got == [(c, "text", ms, "null" if ms is None else "integer") for c, ms in want]


def test_fixed_chars_pads_as_utf8_rpad() -> None:
    """importing._fixed_chars (bytes laid into rows of spaces) against pyarrow's own
    ``utf8_rpad`` of the same values: equal widths, mixed widths, empty values, a sliced
    array; a value longer than the width or a missing one is refused."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pytest

    rng = np.random.default_rng(3)
    stamps = ["2025-01-01 10:00:00", "2025-01-02 10:00:00.250000", ""]
    cases = [
        pa.array([f"00000000-0000-4000-8000-{k:012d}" for k in range(50)]),
        pa.array([stamps[i] for i in rng.integers(0, 3, 200)]),
        pa.array(["", "x" * 36, "", "ab"] * 10).slice(3, 30),
        pa.array([], pa.string()),
    ]
    for col in cases:
        width = 36
        padded = pc.utf8_rpad(col, width=width, padding=" ").to_pylist()
        want = np.frombuffer("".join(padded).encode(), dtype=np.uint8).reshape(len(col), width)
        assert np.array_equal(importing._fixed_chars(col, width), want)
    with pytest.raises(ValueError, match="longer than 4 bytes"):
        importing._fixed_chars(pa.array(["abc", "abcde"]), 4)
    with pytest.raises(ValueError, match="missing"):
        importing._fixed_chars(pa.array(["abc", None]), 4)
