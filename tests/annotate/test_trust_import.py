"""Issue 9 at the import boundary: the vote history, study identity, names and crash inputs.

Every refused import must end in one line ``FILE:LINE: field 'F': problem
(expected ...)`` and leave the database file byte-for-byte unchanged.
"""

from __future__ import annotations

import csv
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session

from annotate.errors import AnnotateError, InputFileError
from annotate.services.catalog import studies
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession
from annotate.store import repo
from tests.annotate.test_importing import file_hash

DATA = Path(__file__).resolve().parent.parent / "data"
TINY = DATA / "studies" / "tiny-difficulty"
COLUMNS = [
    "vote_id",
    "study",
    "kind",
    "annotator",
    "item_id",
    "choice",
    "left",
    "response_ms",
    "fast",
    "created_at",
    "supersedes",
]


def new_id() -> str:
    return str(uuid.uuid4())


def vote(
    annotator: str,
    item: str,
    choice: str = "first",
    *,
    vid: str | None = None,
    supersedes: str = "",
    study: str = "tiny",
    **extra: Any,
) -> dict[str, Any]:
    row = {
        "vote_id": vid or new_id(),
        "study": study,
        "kind": "difficulty",
        "annotator": annotator,
        "item_id": item,
        "choice": choice,
        "left": "first",
        "response_ms": 2500,
        "fast": "False",
        "created_at": "2025-01-01T10:00:00Z",
        "supersedes": supersedes,
    }
    row.update(extra)
    return row


def write_votes(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Rows as a vote file: CSV or JSON Lines by the suffix."""
    if path.suffix == ".jsonl":
        with path.open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
        return path
    cols = list(COLUMNS) + [k for k in rows[0] if k not in COLUMNS]
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A closed database holding the tiny difficulty study."""
    path = tmp_path / "votes.db"
    engine = open_store(path)
    import_paths(engine, [TINY])
    engine.dispose()
    return path


def load(db: Path, rows: list[dict[str, Any]], name: str = "votes.csv") -> Any:
    """Import ``rows`` as one file; return the report."""
    engine = open_store(db)
    try:
        return import_paths(engine, [write_votes(db.parent / name, rows)])
    finally:
        engine.dispose()


def refused(db: Path, paths: list[Path], **kw: Any) -> str:
    """Import ``paths``, expect one InputFileError line, and the database unchanged."""
    before = file_hash(db)
    engine = open_store(db)
    with pytest.raises(InputFileError) as info:
        import_paths(engine, paths, **kw)
    engine.dispose()
    assert file_hash(db) == before, "the database changed after a refused import"
    message = str(info.value)
    assert "\n" not in message
    assert "Traceback" not in message
    return message


def refused_rows(db: Path, rows: list[dict[str, Any]], name: str = "bad.csv") -> str:
    return refused(db, [write_votes(db.parent / name, rows)])


def current(db: Path) -> list[tuple[str, str, str]]:
    engine = open_store(db)
    with Session(engine) as s:
        rows = s.execute(
            text(
                """SELECT a.name, i.key, v.choice FROM current_vote v
                   JOIN annotator a ON a.id = v.annotator_id JOIN item i ON i.id = v.item_id
                   ORDER BY a.name, i.key"""
            )
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]  # type: ignore[misc]


# --- the vote history: who may supersede what --------------------------------


class TestSupersedeRules:
    def test_vote_of_another_annotator_cannot_be_superseded(self, db: Path) -> None:
        base = vote("a", "p1")
        load(db, [base])
        msg = refused_rows(db, [vote("m", "p1", "second", supersedes=base["vote_id"])])
        assert "bad.csv:2: field 'supersedes': vote " in msg
        assert "of annotator 'm' supersedes vote" in msg
        assert "of annotator 'a'" in msg
        assert "(expected the vote_id of the current vote of the same annotator" in msg
        assert current(db) == [("a", "p1", "first")]

    def test_retraction_of_another_annotators_vote_is_refused(self, db: Path) -> None:
        base = vote("b", "p2")
        load(db, [base])
        msg = refused_rows(db, [vote("m", "p2", "retract", supersedes=base["vote_id"])])
        assert "bad.csv:2: field 'supersedes'" in msg
        assert "of annotator 'b'" in msg
        assert current(db) == [("b", "p2", "first")]

    def test_vote_on_another_item_cannot_be_superseded(self, db: Path) -> None:
        base = vote("a", "p1")
        load(db, [base])
        msg = refused_rows(db, [vote("a", "p2", supersedes=base["vote_id"])])
        assert "field 'supersedes'" in msg
        assert "which is on another item" in msg

    def test_vote_of_another_study_cannot_be_superseded(self, db: Path) -> None:
        engine = open_store(db)
        other = db.parent / "tiny2"
        shutil.copytree(TINY, other)
        (other / "study.toml").write_text(
            (TINY / "study.toml").read_text().replace('"tiny"', '"tiny2"'), encoding="utf-8"
        )
        import_paths(engine, [other])
        engine.dispose()
        base = vote("a", "p1", study="tiny2")
        load(db, [base])
        msg = refused_rows(db, [vote("a", "p1", supersedes=base["vote_id"])])
        assert "field 'supersedes'" in msg
        assert "a vote of study 'tiny2'" in msg

    def test_supersedes_naming_no_known_vote_is_refused(self, db: Path) -> None:
        ghost = new_id()
        msg = refused_rows(db, [vote("a", "p1"), vote("a", "p2", supersedes=ghost)])
        assert "bad.csv:3: field 'supersedes': vote " in msg
        assert f"supersedes {ghost}, no vote in the database or earlier in this import" in msg

    def test_supersedes_naming_a_vote_earlier_in_the_same_import_is_accepted(
        self, db: Path
    ) -> None:
        first = vote("a", "p1")
        second = vote("a", "p1", "second", supersedes=first["vote_id"])
        f1 = write_votes(db.parent / "one.csv", [first])
        f2 = write_votes(db.parent / "two.jsonl", [second])
        engine = open_store(db)
        rep = import_paths(engine, [f1, f2])
        engine.dispose()
        assert rep.votes_added == 2
        assert current(db) == [("a", "p1", "second")]

    def test_a_superseded_vote_cannot_be_superseded_again(self, db: Path) -> None:
        first = vote("a", "p1")
        second = vote("a", "p1", "second", supersedes=first["vote_id"])
        load(db, [first, second])
        msg = refused_rows(db, [vote("a", "p1", "skip", supersedes=first["vote_id"])])
        assert "field 'supersedes'" in msg
        assert f"which vote {second['vote_id']} already" in msg

    def test_retraction_must_name_a_vote(self, db: Path) -> None:
        msg = refused_rows(db, [vote("a", "p1", "retract")])
        assert "bad.csv:2: field 'supersedes': a retraction that names no vote" in msg

    def test_retraction_of_a_retraction_is_refused(self, db: Path) -> None:
        first = vote("a", "p1")
        undo = vote("a", "p1", "retract", supersedes=first["vote_id"])
        load(db, [first, undo])
        msg = refused_rows(db, [vote("a", "p1", "retract", supersedes=undo["vote_id"])])
        assert "which is itself a retraction" in msg

    def test_cycle_is_refused(self, db: Path) -> None:
        x, y = new_id(), new_id()
        msg = refused_rows(
            db, [vote("a", "p1", vid=x, supersedes=y), vote("a", "p1", vid=y, supersedes=x)]
        )
        assert "field 'supersedes': votes supersede each other in a cycle" in msg


class TestVoteIdContent:
    def test_stored_vote_id_with_other_content_is_refused(self, db: Path) -> None:
        base = vote("a", "p1", "first")
        load(db, [base])
        changed = dict(base, choice="second")
        msg = refused_rows(db, [changed])
        assert f"bad.csv:2: field 'choice': vote {base['vote_id']} is already stored" in msg
        assert "with choice first (here: second)" in msg
        assert current(db) == [("a", "p1", "first")]

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("annotator", "zed"),
            ("item_id", "p2"),
            ("left", "second"),
            ("response_ms", 9999),
            ("created_at", "2024-05-05T00:00:00Z"),
        ],
    )
    def test_every_field_counts(self, db: Path, field: str, value: object) -> None:
        base = vote("a", "p1")
        load(db, [base])
        msg = refused_rows(db, [dict(base, **{field: value})])
        assert f"field '{field}': vote {base['vote_id']} is already stored" in msg

    def test_same_content_is_skipped(self, db: Path) -> None:
        base = vote("a", "p1")
        load(db, [base])
        rep = load(db, [base], "again.jsonl")
        assert (rep.votes_added, rep.votes_skipped) == (0, 1)

    def test_vote_id_of_another_study_is_refused(self, db: Path) -> None:
        engine = open_store(db)
        import_paths(engine, [DATA / "studies" / "tiny-arena"])
        engine.dispose()
        base = vote("a", "p1")
        load(db, [base])
        clash = dict(
            base, study="tiny-arena", kind="arena", item_id="b1", choice="tie", left="model_a"
        )
        engine = open_store(db)
        with Session(engine) as s:
            battle = s.execute(text("SELECT key FROM item ORDER BY id DESC LIMIT 1")).scalar()
        engine.dispose()
        clash["item_id"] = battle
        msg = refused_rows(db, [clash])
        assert "field 'vote_id'" in msg
        assert "is already stored in study 'tiny'" in msg


def test_supersede_chain_newest_first_imports_in_order(db: Path) -> None:
    """Issue 9 item 10: the chain order is linear (timings: benchmarks/bench_import_chain.py)."""
    rows: list[dict[str, Any]] = []
    prev = ""
    for k in range(3000):
        r = vote("a", "p1", ("first", "second", "skip")[k % 3], supersedes=prev)
        rows.append(r)
        prev = r["vote_id"]
    rep = load(db, rows[::-1])
    assert rep.votes_added == 3000
    assert current(db) == [("a", "p1", rows[-1]["choice"])]


# --- study identity -------------------------------------------------------------


def _shared_study(tmp_path: Path, folder: str, question_text: str) -> Path:
    """The tiny study renamed ``shared``, its first question reading ``question_text``."""
    study = tmp_path / folder
    shutil.copytree(TINY, study)
    toml = (TINY / "study.toml").read_text(encoding="utf-8").replace('"tiny"', '"shared"')
    (study / "study.toml").write_text(toml, encoding="utf-8")
    qs = (study / "questions.jsonl").read_text(encoding="utf-8")
    (study / "questions.jsonl").write_text(
        qs.replace("What is 2 + 2?", question_text), encoding="utf-8"
    )
    return study


def _laptop(tmp_path: Path, name: str, study: Path, annotator: str, fmt: str) -> Path:
    engine = open_store(tmp_path / f"{name}.db")
    import_paths(engine, [study])
    session = VotingSession(engine, "shared", annotator)
    for key in ("left", "right", "skip"):
        session.vote(key, 3000)
    out = export_votes(engine, fmt=fmt, out=tmp_path / f"out-{name}").folder
    engine.dispose()
    return out


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_laptop_b_votes_for_another_shared_study_do_not_merge(tmp_path: Path, fmt: str) -> None:
    """Laptop B's vote_log for a different study also called ``shared`` is refused.

    Both studies have the same item keys (p1, p2, p3), so matching by name and key
    alone merged B's votes onto A's questions.
    """
    out_a = _laptop(tmp_path, "a", _shared_study(tmp_path, "sa", "What is 2 + 2?"), "ann", fmt)
    out_b = _laptop(tmp_path, "b", _shared_study(tmp_path, "sb", "What is 3 + 3?"), "bob", fmt)
    central = tmp_path / "central.db"
    engine = open_store(central)
    import_paths(engine, [out_a])
    engine.dispose()
    # the whole folder: the study itself differs
    msg = refused(central, [out_b])
    assert "a different study named 'shared'" in msg
    # the vote_log alone: the same item keys, but the fingerprint differs
    msg = refused(central, [out_b / f"vote_log.{fmt}"])
    line = 2 if fmt == "csv" else 1  # CSV counts the header line
    assert f"vote_log.{fmt}:{line}: field 'study_fingerprint': these votes are for another " in msg
    assert "study also named 'shared'" in msg
    assert "rename the other study" in msg
    assert {r[0] for r in current(central)} == {"ann"}
    # laptop A's own export merges again as a no-op
    engine = open_store(central)
    rep = import_paths(engine, [out_a / f"vote_log.{fmt}"])
    engine.dispose()
    assert (rep.votes_added, rep.votes_skipped, rep.notes) == (0, 3, [])


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_exports_carry_the_study_fingerprint(tmp_path: Path, fmt: str) -> None:
    import pandas as pd

    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [TINY])
    VotingSession(engine, "tiny", "ann").vote("left", 3000)
    out = export_votes(engine, fmt=fmt, out=tmp_path / "out").folder
    with Session(engine) as s:
        st = repo.get_study(s, "tiny")
    assert st is not None
    assert len(st.fingerprint) == 64
    for stem in ("votes", "vote_log"):
        f = out / f"{stem}.{fmt}"
        df = (
            pd.read_parquet(f)
            if fmt == "parquet"
            else (pd.read_csv(f) if fmt == "csv" else pd.read_json(f, lines=True))
        )
        # selection_probability after it (issue 13: adaptive exports re-import losslessly)
        assert list(df.columns[-2:]) == ["study_fingerprint", "selection_probability"]
        assert set(df["study_fingerprint"]) == {st.fingerprint}


def test_votes_without_fingerprint_import_with_a_note(db: Path) -> None:
    rep = load(db, [vote("a", "p1")])
    assert rep.votes_added == 1
    assert any(
        "carry no study_fingerprint: their items were matched by key only" in n for n in rep.notes
    )


def test_malformed_fingerprint_is_refused(db: Path) -> None:
    msg = refused_rows(db, [vote("a", "p1", study_fingerprint="abc")])
    assert "bad.csv:2: field 'study_fingerprint': 'abc' (expected 64 lowercase hex digits" in msg


# --- names --------------------------------------------------------------------


class TestNames:
    def test_import_study_option_must_be_a_study_name(self, db: Path) -> None:
        msg = refused(db, [DATA / "formats" / "arena_minimal.csv"], study="../../x")
        assert "arena_minimal.csv: field '--study': '../../x' is not a study name" in msg

    def test_vote_file_study_column_must_be_a_study_name(self, db: Path) -> None:
        msg = refused_rows(db, [vote("a", "p1", study="../x")])
        assert "bad.csv:2: field 'study': '../x' is not a study name (expected 1 to 64" in msg

    @pytest.mark.parametrize("name", ["eve\x1b[2J", "", "   ", "a\u202eb", "x" * 101])
    def test_vote_file_annotator_must_be_printable(self, db: Path, name: str) -> None:
        msg = refused_rows(db, [vote(name, "p1")], "bad.jsonl")
        assert "bad.jsonl:1: field 'annotator': " in msg
        assert "annotator name" in msg or "missing" in msg
        assert "\x1b" not in msg

    def test_chatbot_arena_judge_and_llmfao_worker_are_checked(self, db: Path) -> None:
        f = db.parent / "arena.jsonl"
        f.write_text(
            json.dumps({"model_a": "x", "model_b": "y", "winner": "tie", "judge": "j\x07"}) + "\n",
            encoding="utf-8",
        )
        assert "arena.jsonl:1: field 'judge': annotator name" in refused(db, [f])
        g = db.parent / "fao.csv"
        g.write_text(
            "id,prompt,model_x,model_y,worker,winner,left,right\n1,p,x,y,\u200f,tie,x,y\n",
            encoding="utf-8",
        )
        assert "fao.csv:2: field 'worker': annotator name" in refused(db, [g])

    def test_study_name_derived_from_a_file_stem_is_safe(self, tmp_path: Path) -> None:
        f = tmp_path / "..arena battles (2024)\x1b.csv"
        shutil.copy(DATA / "formats" / "arena_minimal.csv", f)
        engine = open_store(tmp_path / "v.db")
        rep = import_paths(engine, [f])
        assert rep.studies_created == ["arena-battles-2024"]

    def test_alice_with_a_space_and_alice_are_one_person(self, db: Path) -> None:
        engine = open_store(db)
        VotingSession(engine, "tiny", "alice").vote("left", 3000)
        engine.dispose()
        voted = current(db)[0][1]
        other = next(p for p in ("p1", "p2", "p3") if p != voted)
        rep = load(db, [vote("Alice ", other)])
        assert rep.votes_added == 1
        engine = open_store(db)
        assert {s.name: s.annotators for s in studies(engine)}["tiny"] == 1
        engine.dispose()
        # and the same person cannot start a second history on the item she voted
        msg = refused_rows(db, [vote(" ALICE", voted)])
        assert "annotator 'alice' already has a vote on this item" in msg

    def test_welcome_screen_name_is_normalised(self, tmp_path: Path) -> None:
        engine = open_store(tmp_path / "v.db")
        import_paths(engine, [TINY])
        VotingSession(engine, "tiny", "  Bob  ").vote("left", 3000)
        VotingSession(engine, "tiny", "bob").vote("left", 3000)
        with Session(engine) as s:
            names = [r[0] for r in s.execute(text("SELECT name FROM annotator")).all()]
            assert names == ["bob"]
            with pytest.raises(AnnotateError, match="control or format character"):
                repo.annotator_id(s, "eve\x1b[2J")

    def test_a_name_stored_before_the_rule_is_found(self, tmp_path: Path) -> None:
        engine = open_store(tmp_path / "v.db")
        with Session(engine) as s, s.begin():
            s.execute(
                text("INSERT INTO annotator (name, created_at) VALUES ('Alice', '2025-01-01')")
            )
        with Session(engine) as s:
            legacy = s.execute(text("SELECT id FROM annotator")).scalar()
            assert repo.annotator_id(s, "alice ", create=False) == legacy


# --- crash inputs: one line, never a traceback --------------------------------

VOTE_CRASH_CELLS = [
    ("response_ms", "1e309"),
    ("response_ms", "inf"),
    ("response_ms", "-inf"),
    ("response_ms", "nan"),
    ("response_ms", "-1"),
    ("response_ms", str(2**63)),
    ("response_ms", "9" * 5000),
    ("created_at", "9999-12-31T23:00:00-05:00"),
    ("created_at", "0001-01-01T00:00:00+05:00"),
    ("created_at", "10000-01-01T00:00:00Z"),
    ("created_at", "2025-13-01"),
]


@pytest.mark.parametrize(("field", "value"), VOTE_CRASH_CELLS)
def test_vote_file_crash_cells(db: Path, field: str, value: str) -> None:
    msg = refused_rows(db, [vote("a", "p1", **{field: value})])
    assert f"bad.csv:2: field '{field}': " in msg
    assert "(expected " in msg


@pytest.mark.parametrize("field", ["annotator", "item_id", "study", "choice", "left"])
def test_vote_file_lone_surrogate(db: Path, field: str) -> None:
    f = db.parent / "bad.jsonl"
    row = json.dumps(vote("a", "p1")).replace(f'"{field}": "', f'"{field}": "\\ud800', 1)
    f.write_text(row + "\n", encoding="utf-8")
    msg = refused(db, [f])
    assert f"bad.jsonl:1: field '{field}': a lone surrogate \\ud800" in msg


RAW_CRASH_FILES: list[tuple[str, bytes, str]] = [
    ("bom.csv", b"\xef\xbb\xbf", "bom.csv: the file is empty (only a byte-order mark)"),
    ("bomnl.csv", b"\xef\xbb\xbf\r\n", "bomnl.csv: the file is empty"),
    ("empty.csv", b"", "empty.csv: the file is empty"),
    ("empty.jsonl", b"\n\n", "empty.jsonl: the file is empty"),
    ("nul.csv", b"vote_id,study\x00\n", "nul.csv:1: binary data (a NUL byte)"),
    ("deep.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n", "deep.jsonl:1: JSON nested too"),
    ("deep.json", b"[" * 100_000, "deep.json: JSON nested too deeply"),
    ("huge.jsonl", b'{"vote_id": ' + b"1" * 5000 + b"}\n", "huge.jsonl:1: a number too long"),
    (
        "surrogate.json",
        b'[{"model_a": "a", "model_b": "b", "winner": "tie", "judge": "j"},'
        b' {"model_a": "a\\udfff", "model_b": "b", "winner": "tie", "judge": "j"}]',
        "surrogate.json:2: field 'model_a': a lone surrogate \\udfff",
    ),
    (
        "surrogate.jsonl",
        b'{"model_a": "a", "model_b": "b", "winner": "tie", "judge": "\\ud800"}\n',
        "surrogate.jsonl:1: field 'judge': a lone surrogate \\ud800",
    ),
    (
        "tstamp.jsonl",
        b'{"model_a": "a", "model_b": "b", "winner": "tie", "judge": "j", "tstamp": 1e309}\n',
        "tstamp.jsonl:1: field 'tstamp': inf",
    ),
    (
        "nested.jsonl",
        b'{"model_a": "a", "model_b": "b", "winner": "tie", "judge": {"x": [1]}}\n',
        "nested.jsonl:1: field 'judge': a JSON object (expected text)",
    ),
    ("bom-only.parquet", b"\xef\xbb\xbf", "bom-only.parquet: not a readable Parquet file"),
]


@pytest.mark.parametrize(("name", "data", "expected"), RAW_CRASH_FILES, ids=lambda v: str(v)[:20])
def test_crash_files(db: Path, name: str, data: bytes, expected: str) -> None:
    f = db.parent / name
    f.write_bytes(data)
    assert expected in refused(db, [f])


HARNESS_LINE = {
    "doc_id": 0,
    "doc": {"question": "q?"},
    "filter": "none",
    "metrics": ["acc"],
    "acc": 1.0,
}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"doc_id": 0, "doc": {"question": "\\ud800"}, "metrics": ["acc"], "acc": 1}',
            "field 'doc': a lone",
        ),
        (
            '{"doc_id": 0, "doc": ' + "[" * 5000 + "]" * 5000 + ', "metrics": ["acc"], "acc": 1}',
            "JSON nested too deeply",
        ),
        ('{"doc_id": 0, "doc": "q", "metrics": ["acc"], "acc": 1e309}', "field 'acc': inf"),
        ('{"doc_id": 0, "doc": "q", "metrics": ["acc"], "acc": ' + "9" * 400 + "}", "field 'acc'"),
        ('{"doc_id": 0, "doc": "q", "metrics": [["acc"]], "acc": 1}', "field 'metrics'"),
        ('{"doc_id": [0], "doc": "q", "metrics": ["acc"], "acc": 1}', "field 'doc_id'"),
        ('{"doc_id": 0, "doc": "q", "metrics": ["acc"], "acc": 1, "filter": {}}', "'filter'"),
    ],
)
def test_lm_eval_crash_lines(db: Path, line: str, expected: str) -> None:
    folder = db.parent / "harness" / "model"
    folder.mkdir(parents=True)
    f = folder / "samples_task_2025-01-01T00-00-00.jsonl"
    f.write_text(json.dumps(HARNESS_LINE) + "\n" + line + "\n", encoding="utf-8")
    msg = refused(db, [db.parent / "harness"], study="h")
    assert "samples_task_2025-01-01T00-00-00.jsonl:2: " in msg
    assert expected in msg


def test_surrogate_escape_pairs_are_fine(tmp_path: Path) -> None:
    f = tmp_path / "ok.jsonl"
    f.write_text(
        '{"model_a": "a\\ud83d\\ude00", "model_b": "b", "winner": "tie", "judge": "j"}\n',
        encoding="utf-8",
    )
    engine: Engine = open_store(tmp_path / "v.db")
    assert import_paths(engine, [f]).votes_added == 1
