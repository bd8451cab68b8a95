"""``votes_io.uuid_rows`` and ``VoteTable.supersedes_row`` (issue 13).

The reader finds the vote each ``supersedes`` names (the import's plan checks chains
with it). The reference is ``pyarrow.compute.index_in`` with the vote ids as its value
set (what the plan called before): the same row for every value, -1 where it found none.
The fast lookup matches 64-bit hashes and confirms each match byte for byte, so a value
whose hash equals a vote id's while its bytes differ (forced here by handing over the
hashes of other ids) must come back as -1; without hashes the strings decide.
"""

from __future__ import annotations

import uuid as uuidlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from annotate.services import votes_io
from annotate.services.votes_io import read_vote_table, uuid_rows


def _hashes(ids: list[str]) -> Any:
    hashes = votes_io._sorted_hashes(votes_io._uuid_hashes(votes_io._uuid_chars(pa.array(ids))))
    assert hashes is not None
    return hashes


def _reference(ids: Any, values: Any) -> Any:
    found = pc.index_in(values, value_set=ids)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def test_same_rows_as_index_in() -> None:
    rng = np.random.default_rng(7)
    ids = [str(uuidlib.UUID(int=int(x))) for x in rng.integers(0, 2**62, 5000)]
    absent = [str(uuidlib.UUID(int=int(x) + 2**100)) for x in rng.integers(0, 2**62, 50)]
    values = [ids[int(k)] for k in rng.integers(0, len(ids), 400)]
    values += [*absent, ids[3].upper(), ids[0], ids[-1]]
    col, hashes = pa.array(ids, pa.string()), _hashes(ids)
    vals = pa.array(values, pa.string())
    got = uuid_rows(col, hashes, vals)
    assert np.array_equal(got, _reference(col, vals))
    assert (got[400:451] == -1).all()  # absent, and another case of a stored id
    assert got[-2] == 0
    assert got[-1] == len(ids) - 1
    # slices (arrow offsets) and an empty array
    for part in (vals.slice(10, 20), vals.slice(0, 0)):
        assert np.array_equal(uuid_rows(col.slice(0), hashes, part), _reference(col, part))


def test_a_hash_match_with_other_bytes_is_no_row() -> None:
    ids = [str(uuidlib.UUID(int=k)) for k in range(1, 101)]
    others = [str(uuidlib.UUID(int=k + 2**90)) for k in range(1, 101)]
    # the hash of row k is given as others[k]'s: looking up others[k] matches row k by
    # hash, and its bytes differ
    got = uuid_rows(pa.array(ids), _hashes(others), pa.array(others[:10]))
    assert (got == -1).all()


def test_without_hashes_or_for_other_values_the_strings_decide() -> None:
    ids = [str(uuidlib.UUID(int=k)) for k in range(1, 101)]
    col = pa.array([ids[5], "not-a-uuid", ids[99]], pa.string())
    assert uuid_rows(pa.array(ids), None, col).tolist() == [5, -1, 99]
    assert uuid_rows(pa.array(ids), _hashes(ids), col).tolist() == [5, -1, 99]


def test_reader_finds_the_superseded_rows(tmp_path: Path) -> None:
    u = [str(uuidlib.UUID(int=k + 1)) for k in range(5)]
    outside = str(uuidlib.UUID(int=99))
    csv = tmp_path / "votes.csv"
    csv.write_text(
        "vote_id,study,annotator,item_id,choice,supersedes\n"
        f"{u[0]},s,ann,p1,first,\n"
        f"{u[1]},s,ann,p1,second,{u[0]}\n"
        f"{u[2]},s,bob,p1,first,\n"
        f"{u[3]},s,bob,p1,retract,{u[2]}\n"
        f"{u[4]},s,eve,p1,first,{outside}\n",
        encoding="utf-8",
    )
    table = read_vote_table(csv)
    assert table is not None
    assert table.supersedes_row.tolist() == [-1, 0, -1, 2, -1]
