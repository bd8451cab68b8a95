"""Importing study folders, vote files and third-party formats.

Every malformed fixture in tests/data/bad must fail with one clear line naming
the file, the line and the field, and leave the database byte-for-byte unchanged.
"""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Engine

from annotate.errors import InputFileError
from annotate.services.arrays import response_matrix, vote_arrays
from annotate.services.catalog import studies
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession

DATA = Path(__file__).resolve().parent.parent / "data"
BAD = DATA / "bad"
EXPECTED = json.loads((BAD / "EXPECTED.json").read_text(encoding="utf-8"))


def file_hash(path: Path) -> str:
    """The database file's bytes once every committed page is in it: a reader engine the
    voting service caches (weakly, per engine) can keep a connection open past
    ``engine.dispose()``, so the WAL is folded in by whichever connection closes last, at
    a time set by the garbage collector; it is folded in here first, explicitly."""
    gc.collect()
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database holding the tiny studies and a few votes, closed (WAL checkpointed)."""
    path = tmp_path / "votes.db"
    engine = open_store(path)
    import_paths(engine, [DATA / "studies" / "tiny-difficulty", DATA / "studies" / "tiny-arena"])
    VotingSession(engine, "tiny", "ann").vote("left", 4000)
    engine.dispose()
    return path


def assert_unchanged_after(db: Path, paths: list[Path], **kw: object) -> InputFileError:
    before = file_hash(db)
    engine = open_store(db)
    with pytest.raises(InputFileError) as info:
        import_paths(engine, paths, **kw)  # type: ignore[arg-type]
    engine.dispose()
    assert not (db.parent / (db.name + "-wal")).exists() or True
    assert file_hash(db) == before, "the database changed after a failed import"
    return info.value


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_malformed_study_leaves_database_unchanged(db: Path, case: str) -> None:
    err = assert_unchanged_after(db, [BAD / case])
    message = str(err)
    assert EXPECTED[case] in message, message
    assert "\n" not in message
    assert str(BAD / case) in message


def test_huge_line_is_rejected_with_its_line_number(db: Path, tmp_path: Path) -> None:
    study = tmp_path / "huge"
    shutil.copytree(DATA / "studies" / "tiny-difficulty", study)
    big = json.dumps({"id": "big", "subject": "arith", "text": "x" * (50 * 1024 * 1024)})
    with (study / "questions.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(big + "\n")
    err = assert_unchanged_after(db, [study])
    assert "questions.jsonl:6: line is 52,428," in str(err)


def test_failure_in_second_path_rolls_back_the_first(db: Path) -> None:
    # tiny-arena is already stored; llmfao_sample is valid; bad-kind fails: nothing is added.
    err = assert_unchanged_after(db, [DATA / "formats" / "llmfao_sample.csv", BAD / "bad-kind"])
    assert "bad-kind" in str(err)


def test_importing_a_study_twice_is_a_no_op(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    first = import_paths(engine, [DATA / "studies" / "tiny-difficulty"])
    again = import_paths(engine, [DATA / "studies" / "tiny-difficulty"])
    assert first.studies_created == ["tiny"]
    assert again.studies_unchanged == ["tiny"]
    assert again.items_added == 0


def test_different_study_with_same_name_is_refused(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty"])
    other = tmp_path / "other"
    shutil.copytree(DATA / "studies" / "tiny-difficulty", other)
    (other / "pairs.csv").write_text("pair_id,first,second\np1,a1,a3\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="a different study named 'tiny'"):
        import_paths(engine, [other])


def test_response_matrix_long_and_wide_agree(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty"])
    long = response_matrix(engine, "tiny")
    wide = tmp_path / "wide"
    shutil.copytree(DATA / "studies" / "tiny-difficulty", wide)
    (wide / "study.toml").write_text(
        (wide / "study.toml").read_text().replace('"tiny"', '"tiny-wide"'), encoding="utf-8"
    )
    rows = ["question_id,m1,m2,m3"] + [f"{q},1,0,0.5" for q in ("a1", "a2", "a3", "c1", "c2")]
    (wide / "responses.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    import_paths(engine, [wide])
    w = response_matrix(engine, "tiny-wide")
    assert long.models == w.models == ["m1", "m2", "m3"]
    assert (long.scores == w.scores).all()
    assert long.scores.shape == (5, 3)


class TestThirdPartyFormats:
    @pytest.mark.parametrize(
        "name", ["arena_battles.json", "arena_battles.jsonl", "arena_battles.csv"]
    )
    def test_chatbot_arena_records(self, tmp_path: Path, name: str) -> None:
        engine = open_store(tmp_path / "v.db")
        rep = import_paths(engine, [DATA / "formats" / name], study="arena")
        assert (rep.items_added, rep.votes_added) == (4, 4)
        va = vote_arrays(engine, "arena")
        # winners: model_a, tie, tie (bothbad), model_b -> codes 1, 3, 4, 2
        assert va.choice.tolist() == [1, 3, 4, 2]
        assert sorted(va.annotators) == ["j1", "j2", "j3"]
        again = import_paths(engine, [DATA / "formats" / name], study="arena")
        assert (again.items_added, again.votes_added, again.votes_skipped) == (0, 0, 4)

    def test_chatbot_arena_minimal_columns(self, tmp_path: Path) -> None:
        engine = open_store(tmp_path / "v.db")
        rep = import_paths(engine, [DATA / "formats" / "arena_minimal.csv"])
        assert rep.studies_created == ["arena_minimal"]
        assert rep.votes_added == 2

    def test_chatbot_arena_bad_winner(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.csv"
        bad.write_text("model_a,model_b,winner,judge\nx,y,model_c,j\n", encoding="utf-8")
        engine = open_store(tmp_path / "v.db")
        with pytest.raises(InputFileError, match=r"bad.csv:2: field 'winner': 'model_c'"):
            import_paths(engine, [bad])

    def test_llmfao_layout(self, tmp_path: Path) -> None:
        engine = open_store(tmp_path / "v.db")
        rep = import_paths(engine, [DATA / "formats" / "llmfao_sample.csv"], study="fao")
        assert (rep.items_added, rep.votes_added) == (2, 3)
        va = vote_arrays(engine, "fao")
        assert va.choice.tolist() == [3, 1, 2]

    def test_lm_eval_harness_output(self, tmp_path: Path) -> None:
        engine = open_store(tmp_path / "v.db")
        rep = import_paths(engine, [DATA / "formats" / "lm_eval"], study="harness")
        # 2 models x (3 arc_easy docs + 3 gsm8k docs of the first filter, strict-match)
        assert rep.scores_added == 12
        m = response_matrix(engine, "harness")
        assert m.models == ["org__model-large", "org__model-small"]
        assert len(m.questions) == 6
        assert set(m.subjects) == {"arc_easy", "gsm8k"}
        i = m.questions.index("arc_easy/1")
        assert m.scores[i].tolist() == [1.0, 0.0]
        again = import_paths(engine, [DATA / "formats" / "lm_eval"], study="harness")
        assert again.scores_added == 0

    def test_lm_eval_metric_and_model_flags(self, tmp_path: Path) -> None:
        engine = open_store(tmp_path / "v.db")
        folder = DATA / "formats" / "lm_eval" / "org__model-small"
        rep = import_paths(
            engine,
            [folder / "samples_arc_easy_2025-01-15T10-20-30.123456.jsonl"],
            study="one",
            model="renamed",
            metric="acc_norm",
        )
        assert rep.scores_added == 3
        assert response_matrix(engine, "one").models == ["renamed"]

    def test_lm_eval_unknown_metric(self, tmp_path: Path) -> None:
        engine = open_store(tmp_path / "v.db")
        with pytest.raises(InputFileError, match="field 'bleu': no value for metric 'bleu'"):
            import_paths(engine, [DATA / "formats" / "lm_eval"], study="h", metric="bleu")


@pytest.mark.shared_data
def test_llmfao_real_crowd_votes(shared_data: Path, tmp_path: Path) -> None:
    """Counts from ../shared/data/llmfao_pairwise_crowd/SOURCE.md: 8,931 votes, 2,139 pairs,
    124 workers; winners left 2,911, right 2,549, tie 3,471."""
    engine = open_store(tmp_path / "v.db")
    path = shared_data / "llmfao_pairwise_crowd" / "crowd-comparisons.csv"
    rep = import_paths(engine, [path], study="llmfao")
    assert (rep.items_added, rep.votes_added) == (2139, 8931)
    va = vote_arrays(engine, "llmfao")
    assert len(va.annotators) == 124
    counts = {int(c): int((va.choice == c).sum()) for c in (1, 2, 3)}
    assert counts == {1: 2911, 2: 2549, 3: 3471}


def _vote_some(engine: Engine, annotator: str, n: int) -> None:
    s = VotingSession(engine, "tiny", annotator)
    for key in ["left", "right", "skip"][:n]:
        s.vote(key, 2500)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_import_round_trip_merges_laptops(tmp_path: Path, fmt: str) -> None:
    studies_dir = DATA / "studies" / "tiny-difficulty"
    laptops = []
    for name in ("alice", "bob"):
        engine = open_store(tmp_path / f"{name}.db")
        import_paths(engine, [studies_dir])
        _vote_some(engine, name, 3)
        s = VotingSession(engine, "tiny", name)
        s.undo()  # history: a retraction row
        s.vote("left", 3000)  # and a new vote superseding it
        laptops.append(export_votes(engine, fmt=fmt, out=tmp_path / f"out-{name}"))
    central = open_store(tmp_path / "central.db")
    for res in laptops:
        rep = import_paths(central, [res.folder])
        assert rep.votes_added == 5  # 3 votes + 1 retraction + 1 re-vote
    again = import_paths(central, [laptops[0].folder])
    assert (again.votes_added, again.votes_skipped) == (0, 5)
    info = {s.name: s for s in studies(central)}
    assert info["tiny"].votes == 6
    assert info["tiny"].annotators == 2
    merged = export_votes(central, fmt=fmt, out=tmp_path / "merged")
    assert merged.votes == 6
    assert merged.log_rows == 10
    # Lossless: every field of every history row survives the trip.
    import pandas as pd

    def load(folder: Path) -> pd.DataFrame:
        f = folder / f"vote_log.{fmt}"
        df = (
            pd.read_parquet(f)
            if fmt == "parquet"
            else (pd.read_csv(f) if fmt == "csv" else pd.read_json(f, lines=True))
        )
        return df.sort_values("vote_id").reset_index(drop=True).astype(str)

    both = pd.concat([load(r.folder) for r in laptops]).sort_values("vote_id")
    pd.testing.assert_frame_equal(both.reset_index(drop=True), load(merged.folder))


def test_conflicting_history_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    studies_dir = DATA / "studies" / "tiny-difficulty"
    a = open_store(tmp_path / "a.db")
    b = open_store(tmp_path / "b.db")
    for e in (a, b):
        import_paths(e, [studies_dir])
        _vote_some(e, "same-person", 1)  # the same annotator votes the same item on two laptops
    out = export_votes(b, fmt="csv", out=tmp_path / "out")
    a.dispose()
    before = file_hash(tmp_path / "a.db")
    a = open_store(tmp_path / "a.db")
    with pytest.raises(InputFileError, match="already has a vote on this item"):
        import_paths(a, [out.folder])
    a.dispose()
    assert file_hash(tmp_path / "a.db") == before


def test_vote_file_errors_name_line_and_field(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty"])
    _vote_some(engine, "x", 2)
    out = export_votes(engine, fmt="csv", out=tmp_path / "out")
    import csv

    with (out.folder / "votes.csv").open(encoding="utf-8") as fh:
        header, row = list(csv.reader(fh))[:2]
    cases = {
        "choice": ("choice", "firstt", "field 'choice': 'firstt'"),
        "item": ("item_id", "zz", "field 'item_id': unknown item 'zz'"),
        "uuid": ("vote_id", "not-a-uuid", "field 'vote_id': 'not-a-uuid'"),
        "ms": ("response_ms", "-3", "field 'response_ms': '-3'"),
        "arena-choice": ("choice", "model_a", "field 'choice': 'model_a' in a difficulty study"),
        "study": ("study", "nope", "field 'study': unknown study 'nope'"),
        "time": ("created_at", "yesterday", "field 'created_at': 'yesterday'"),
    }
    for name, (field, value, msg) in cases.items():
        bad = list(row)
        bad[header.index(field)] = value
        f = tmp_path / f"{name}.csv"
        with f.open("w", encoding="utf-8", newline="") as fh:
            csv.writer(fh).writerows([header, bad])
        target = open_store(tmp_path / f"{name}.db")
        with pytest.raises(InputFileError, match=f"{name}.csv:2: {msg}"):
            import_paths(target, [DATA / "studies" / "tiny-difficulty", f])
        assert studies(target) == []  # the study folder in the same command was rolled back
