"""``votes_io.uuid_rows``: the rows of a vote table holding given vote ids (issue 13).

The import's plan finds the vote each ``supersedes`` names with it. The reference is
``pyarrow.compute.index_in`` with the table's vote ids as the value set (what the plan
called before): the same row for every value, -1 where it found none. The fast lookup
matches 64-bit hashes and confirms each match byte for byte, so a value whose hash
equals a vote id's while its bytes differ (forced here by giving the table the hashes
of other ids) must come back as -1, and a table without hashes falls back to strings.
"""

from __future__ import annotations

import dataclasses
import uuid as uuidlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from annotate.services import votes_io
from annotate.services.votes_io import VoteTable, uuid_rows


def _table(ids: list[str], hashes_of: list[str] | None = None) -> VoteTable:
    col = pa.array(ids, pa.string())
    source = col if hashes_of is None else pa.array(hashes_of, pa.string())
    index = votes_io._hash_index(votes_io._uuid_hashes(votes_io._uuid_chars(source)))
    assert index.is_unique
    names = [f.name for f in dataclasses.fields(VoteTable)]
    given: dict[str, Any] = dict.fromkeys(names)
    given.update(path=Path("votes.csv"), uuid=col, uuid_hashes=index)
    return VoteTable(**given)


def _reference(table: VoteTable, values: Any) -> Any:
    found = pc.index_in(values, value_set=table.uuid)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def test_same_rows_as_index_in() -> None:
    rng = np.random.default_rng(7)
    ids = [str(uuidlib.UUID(int=int(x))) for x in rng.integers(0, 2**62, 5000)]
    absent = [str(uuidlib.UUID(int=int(x) + 2**100)) for x in rng.integers(0, 2**62, 50)]
    values = [ids[int(k)] for k in rng.integers(0, len(ids), 400)]
    values += [*absent, ids[3].upper(), ids[0], ids[-1]]
    table = _table(ids)
    col = pa.array(values, pa.string())
    got = uuid_rows(table, col)
    assert np.array_equal(got, _reference(table, col))
    assert (got[400:450] == -1).all()
    assert got[450] == -1
    assert got[-2] == 0
    assert got[-1] == len(ids) - 1
    # a slice (arrow offset) and an empty array
    assert np.array_equal(uuid_rows(table, col.slice(10, 20)), _reference(table, col.slice(10, 20)))
    assert uuid_rows(table, col.slice(0, 0)).size == 0


def test_a_hash_match_with_other_bytes_is_no_row() -> None:
    ids = [str(uuidlib.UUID(int=k)) for k in range(1, 101)]
    others = [str(uuidlib.UUID(int=k + 2**90)) for k in range(1, 101)]
    # the table's hash of row k is the hash of others[k]: looking up others[k] matches
    # row k by hash, and its bytes differ
    table = _table(ids, hashes_of=others)
    got = uuid_rows(table, pa.array(others[:10], pa.string()))
    assert (got == -1).all()


def test_without_hashes_or_for_other_values_the_strings_decide() -> None:
    ids = [str(uuidlib.UUID(int=k)) for k in range(1, 101)]
    col = pa.array([ids[5], "not-a-uuid", ids[99]], pa.string())
    assert uuid_rows(dataclasses.replace(_table(ids), uuid_hashes=None), col).tolist() == [
        5,
        -1,
        99,
    ]
    assert uuid_rows(_table(ids), col).tolist() == [5, -1, 99]
