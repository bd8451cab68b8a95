"""Re-importing an export's re-tests and questionnaire answers (issue 16).

``annotate export`` writes the swapped re-test chains (``retests.<fmt>``) and the
questionnaire answers (``annotators.<fmt>``) beside the vote files; importing the
export folder must bring them back, so a study merged from laptops loses neither: the
round trip is byte-identical (on SQLite and PostgreSQL), importing again adds nothing,
and every row that breaks a rule of the vote history stops the import with one line
and leaves the database as it was.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from annotate.cli import main
from annotate.errors import InputFileError
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "tests/data/studies/gold-difficulty"
GOLD_ARENA = ROOT / "tests/data/studies/gold-arena"

TABLES = {
    "vote": "SELECT uuid, study_id, annotator_id, item_id, choice, swapped, response_ms, fast, "
    "created_at, supersedes, retest_of FROM vote ORDER BY uuid",
    "annotatoranswer": "SELECT study_id, annotator_id, key, answer, created_at "
    "FROM annotatoranswer ORDER BY study_id, annotator_id, key",
    "annotator": "SELECT id, name FROM annotator ORDER BY id",
}


def content(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    with engine.connect() as c:
        return {t: [tuple(r) for r in c.execute(text(q))] for t, q in TABLES.items()}


def run_study(engine: Engine) -> None:
    """Two annotators through the gold study (retest_share 1, retest_after 1): answers,
    votes, re-tests, and an undo of a re-test (a retraction and a new vote in its chain)."""
    ada = VotingSession(engine, "gold", "ada")
    ada.answer_questionnaire({"field": ["Science"], "subjects": ["arith", "chem"]})
    ada.vote("left", 3000)
    ada.vote("left", 3000)
    ada.vote("right", 2500)  # the re-test of the first item
    assert ada.undo()
    ada.vote("left", 2600)
    while ada.current() is not None:
        ada.vote("right", 3100)
    bob = VotingSession(engine, "gold", "bob")
    bob.answer_questionnaire({"field": ["[link=x]Law[/link]"], "subjects": ["chem"]})
    while bob.current() is not None:
        bob.vote("left", 4000)


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    engine = open_store(tmp_path / "src.db")
    import_paths(engine, [GOLD, GOLD_ARENA])
    run_study(engine)
    export_votes(engine, fmt="csv", out=tmp_path / "out")
    engine.dispose()
    return tmp_path / "out"


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_round_trip_is_lossless(tmp_path: Path, store_target: Path | str, fmt: str) -> None:
    src = open_store(tmp_path / "src.db")
    import_paths(src, [GOLD, GOLD_ARENA])
    run_study(src)
    first = export_votes(src, fmt=fmt, out=tmp_path / "one")
    names = {str(p.relative_to(tmp_path / "one")) for p in first.files}
    assert {f"retests.{fmt}", f"annotators.{fmt}"} <= names
    dst = open_store(store_target)
    report = import_paths(dst, [tmp_path / "one"])
    assert any("re-test vote" in n for n in report.notes), report.notes
    assert any("questionnaire answer" in n for n in report.notes), report.notes
    export_votes(dst, fmt=fmt, out=tmp_path / "two")
    for name in sorted(names):
        a, b = (tmp_path / d / name for d in ("one", "two"))
        assert a.read_bytes() == b.read_bytes(), name
    # the re-test chains are whole: the same rows, the same statuses
    with src.connect() as c:
        want = sorted(tuple(r) for r in c.execute(text(TABLES["vote"].split(" ORDER")[0])))
    with dst.connect() as c:
        got = sorted(tuple(r) for r in c.execute(text(TABLES["vote"].split(" ORDER")[0])))
    strip = [(r[0], r[4], bool(r[5]), r[6], bool(r[7]), r[9], r[10]) for r in want]
    assert strip == [(r[0], r[4], bool(r[5]), r[6], bool(r[7]), r[9], r[10]) for r in got]
    # importing again (and into the source itself: a merge) adds nothing
    again = import_paths(dst, [tmp_path / "one"])
    assert not any("re-test" in n or "questionnaire" in n for n in again.notes)
    before = content(src)
    import_paths(src, [tmp_path / "one"])
    assert content(src) == before
    src.dispose()
    dst.dispose()


def test_an_adaptive_and_quality_study_survives_the_command_line(
    exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "merged.db"
    assert main(["import", "--db", str(db), str(exported)]) == 0
    out = capsys.readouterr()
    assert "re-test votes added" in out.out + out.err
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "again")]) == 0
    for name in ("retests.csv", "annotators.csv", "vote_log.csv"):
        assert (exported / name).read_bytes() == (tmp_path / "again" / name).read_bytes()


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        r = csv.DictReader(fh)
        return list(r.fieldnames or []), list(r)


def write_csv(path: Path, cols: list[str], recs: list[dict[str, str]]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(recs)
    path.write_text(buf.getvalue(), encoding="utf-8")


def tamper(folder: Path, stem: str, fn: Any) -> None:
    cols, recs = read_csv(folder / f"{stem}.csv")
    fn(recs)
    write_csv(folder / f"{stem}.csv", cols, recs)


def set_field(i: int, field: str, value: str) -> Any:
    def fn(recs: list[dict[str, str]]) -> None:
        recs[i][field] = value

    return fn


def vote_of(folder: Path, annotator: str) -> str:
    """One of the annotator's votes in the gold study (bob's subjects are routed: chem)."""
    _, recs = read_csv(folder / "vote_log.csv")
    return next(r["vote_id"] for r in recs if r["annotator"] == annotator and r["study"] == "gold")


def _retest_cases(out: Path) -> dict[str, tuple[str, Any, str, str]]:
    """case -> (file stem, edit, field named, fragment of the message)."""
    _, rt = read_csv(out / "retests.csv")
    first = rt[0]
    other_item = next(r["item_id"] for r in rt if r["item_id"] != first["item_id"])
    bob_vote = vote_of(out, "bob")
    root = next(r for r in rt if r["annotator"] == "ada" and not r["supersedes"])
    later = [r for r in rt if r["supersedes"] and r["annotator"] == "ada"]

    def second_root(recs: list[dict[str, str]]) -> None:
        extra = dict(root)
        extra["vote_id"] = "0f0f0f0f-0000-4000-8000-000000000001"
        recs.append(extra)

    def fork(recs: list[dict[str, str]]) -> None:
        extra = dict(later[-1])
        extra["vote_id"] = "0f0f0f0f-0000-4000-8000-000000000002"
        recs.append(extra)

    return {
        "edited choice": (
            "retests",
            set_field(0, "choice", "first" if first["choice"] != "first" else "second"),
            "vote_id",
            "other content",
        ),
        "unknown retest_of": (
            "retests",
            set_field(0, "retest_of", "0f0f0f0f-0000-4000-8000-00000000dead"),
            "retest_of",
            "no vote in the database",
        ),
        "another annotator's vote": (
            "retests",
            set_field(0, "retest_of", bob_vote),
            "retest_of",
            "another annotator",
        ),
        "another item": (
            "retests",
            set_field(0, "item_id", other_item),
            "retest_of",
            "another annotator, item or study",
        ),
        "a second chain": ("retests", second_root, "supersedes", "one re-test chain"),
        "a fork of the chain": ("retests", fork, "supersedes", "already replaced"),
        "bad left": ("retests", set_field(0, "left", "middle"), "left", "first or second"),
        "bad choice": ("retests", set_field(0, "choice", "model_a"), "choice", "first or"),
        "bad vote id": (
            "retests",
            set_field(0, "vote_id", "x'; DROP TABLE vote;--"),
            "vote_id",
            "UUID",
        ),
        "bad time": ("retests", set_field(0, "created_at", "yesterday"), "created_at", "ISO 8601"),
        "hostile annotator": (
            "retests",
            set_field(0, "annotator", "ada\x1b]0;pwned\x07"),
            "annotator",
            "",
        ),
        "undeclared choice": (
            "annotators",
            set_field(0, "answer", '["Art"]'),
            "answer",
            "JSON list of one",
        ),
        "two for a single question": (
            "annotators",
            set_field(0, "answer", '["Science", "[link=x]Law[/link]"]'),
            "answer",
            "JSON list of one",
        ),
        "not JSON": ("annotators", set_field(0, "answer", "Science"), "answer", "JSON list"),
        "unknown question": ("annotators", set_field(0, "key", "age"), "key", "questionnaire"),
        "unknown study": ("annotators", set_field(0, "study", "nope"), "study", "no study"),
    }


CASES = [
    "edited choice",
    "unknown retest_of",
    "another annotator's vote",
    "another item",
    "a second chain",
    "a fork of the chain",
    "bad left",
    "bad choice",
    "bad vote id",
    "bad time",
    "hostile annotator",
    "undeclared choice",
    "two for a single question",
    "not JSON",
    "unknown question",
    "unknown study",
]


CONFLICTS = {"edited choice"}
"""Cases imported into the database that already holds the export (a conflict with a
stored row); the others into an empty database, where the whole import (studies and
votes of the same folder included) must roll back."""


@pytest.mark.parametrize("case", CASES)
def test_a_bad_row_is_one_line_and_changes_nothing(
    exported: Path, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "dst.db"
    engine = open_store(db)
    if case in CONFLICTS:
        import_paths(engine, [exported])
    stem, fn, field, fragment = _retest_cases(exported)[case]
    tamper(exported, stem, fn)
    before = content(engine)
    with pytest.raises(InputFileError) as info:
        import_paths(engine, [exported])
    err = info.value
    assert err.field == field, str(err)
    assert fragment in str(err)
    assert str(exported / f"{stem}.csv") in str(err)
    assert err.line is not None
    assert content(engine) == before
    engine.dispose()
    # and on the command line: one line, no traceback, no escape reaches the terminal
    assert main(["import", "--db", str(db), str(exported)]) != 0
    printed = capsys.readouterr().err
    assert len(printed.strip().splitlines()) == 1, printed
    assert "Traceback" not in printed
    assert "\x1b" not in printed


def test_an_answer_differing_from_the_stored_one_is_refused(exported: Path, tmp_path: Path) -> None:
    engine = open_store(tmp_path / "dst.db")
    import_paths(engine, [exported])
    cols, recs = read_csv(exported / "annotators.csv")
    row = next(r for r in recs if r["annotator"] == "ada" and r["key"] == "field")
    row["answer"] = json.dumps(["[link=x]Law[/link]"])
    write_csv(exported / "annotators.csv", cols, recs)
    before = content(engine)
    with pytest.raises(InputFileError, match="already answered 'field'"):
        import_paths(engine, [exported])
    assert content(engine) == before
    engine.dispose()


def test_retests_of_votes_in_the_same_import_are_accepted(exported: Path, tmp_path: Path) -> None:
    """A fresh database: the re-tests name votes that arrive in the same import."""
    engine = open_store(tmp_path / "fresh.db")
    report = import_paths(engine, [exported])
    with engine.connect() as c:
        n = c.execute(text("SELECT count(*) FROM vote WHERE retest_of IS NOT NULL")).scalar()
        answers = c.execute(text("SELECT count(*) FROM annotatoranswer")).scalar()
    _, rt = read_csv(exported / "retests.csv")
    _, an = read_csv(exported / "annotators.csv")
    assert n == len(rt) > 0
    assert answers == len(an) == 4
    assert f"{len(rt)} re-test votes added" in report.notes
    engine.dispose()
