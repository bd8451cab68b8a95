"""Gold items, swapped re-tests and the annotator questionnaire (issue 16 items 4 and 6).

Everything here is checked in the SQLite file or against hand counts: gold and re-test
votes are stored in the vote table like other votes, a re-test is its own chain beside
the original (one current vote per annotator and item still holds), re-tests are left
out of the current votes the fits read, and the rates match hand-made cases.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from annotate.choices import Choice
from annotate.errors import InputFileError
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.quality import quality_from_rows, quality_tables, study_quality
from annotate.services.retest import selected
from annotate.services.studies import parse_study
from annotate.services.voting import VotingSession
from annotate.store import repo
from annotate.study_settings import QUALITY_SETTINGS, SettingError, StudySettings
from tests.annotate.conftest import rows

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "tests/data/studies/gold-difficulty"
GOLD_ARENA = ROOT / "tests/data/studies/gold-arena"
SCHEMA_004 = ROOT / "tests/store/data/schema_004.sql"


@pytest.fixture
def gold_engine(tmp_path: Path) -> Engine:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [GOLD, GOLD_ARENA])
    return engine


def copy_study(tmp_path: Path, src: Path, **files: str) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    for name, body in files.items():
        (dst / name.replace("_", ".", 1)).write_text(body, encoding="utf-8")
    return dst


# --- the study file formats ------------------------------------------------------------


def test_gold_column_is_parsed_and_optional() -> None:
    spec = parse_study(GOLD)
    assert [(p.key, p.gold) for p in spec.pairs] == [
        ("p1", "second"),
        ("p2", None),
        ("p3", "first"),
    ]
    arena = parse_study(GOLD_ARENA)
    assert [b.gold for b in arena.battles] == ["model_a", "both_bad", None]
    # a file without the column (every study before issue 16) is read as before
    tiny = parse_study(ROOT / "tests/data/studies/tiny-difficulty")
    assert all(p.gold is None for p in tiny.pairs)
    # and its stored settings JSON keeps the keys it had (issue 16's only where given)
    assert not set(QUALITY_SETTINGS) & set(tiny.settings.as_dict())
    assert set(QUALITY_SETTINGS) <= set(parse_study(GOLD).settings.as_dict())


def test_bad_gold_value_is_one_line(tmp_path: Path) -> None:
    folder = copy_study(tmp_path, GOLD, pairs_csv="pair_id,first,second,gold\np1,a1,a2,harder\n")
    with pytest.raises(InputFileError) as err:
        parse_study(folder)
    msg = str(err.value)
    assert "pairs.csv:2:" in msg
    assert "gold" in msg
    assert "harder" in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"retest_share": 1.5}, "from 0 to 1"),
        ({"retest_share": "x"}, "a number"),
        ({"route_subjects": "nope"}, "questionnaire item"),
        ({"questionnaire": [{"key": "k", "prompt": "p", "choices": []}]}, "choices"),
        ({"questionnaire": [{"key": "k", "prompt": "p", "choices": ["a"], "x": 1}]}, "only"),
        (
            {
                "questionnaire": [
                    {"key": "k", "prompt": "p", "choices": ["a"]},
                    {"key": "k", "prompt": "q", "choices": ["b"]},
                ]
            },
            "distinct keys",
        ),
        (
            {
                "questionnaire": [{"key": "k", "prompt": "p", "choices": ["a"]}],
                "route_subjects": "k",
            },
            "multiple = true",
        ),
    ],
)
def test_bad_settings_are_refused(raw: dict[str, object], fragment: str) -> None:
    with pytest.raises(SettingError, match=fragment):
        StudySettings.from_dict("difficulty", raw)


def test_retests_need_blind_arena_studies() -> None:
    with pytest.raises(SettingError, match="reveal_models"):
        StudySettings.from_dict("arena", {"retest_share": 0.2})
    s = StudySettings.from_dict("arena", {"retest_share": 0.2, "reveal_models": False})
    assert s.retest_share == 0.2


def test_settings_round_trip_through_the_store(gold_engine: Engine) -> None:
    with Session(gold_engine) as s:
        st = repo.get_study(s, "gold")
    assert st is not None
    assert st.settings == parse_study(GOLD).settings
    assert [q.key for q in st.settings.questionnaire] == ["field", "subjects"]
    assert st.settings.questionnaire[1].multiple


# --- swapped re-tests --------------------------------------------------------------------


def vote_rows(db: Path) -> list[tuple[object, ...]]:
    return rows(
        db,
        """SELECT i.key, v.choice, v.swapped, v.supersedes IS NOT NULL, v.retest_of
           FROM vote v JOIN item i ON i.id = v.item_id JOIN study s ON s.id = v.study_id
           WHERE s.name = 'gold' ORDER BY v.id""",
    )


def test_retest_shows_sides_swapped_and_is_stored_beside_the_original(
    gold_engine: Engine, tmp_path: Path
) -> None:
    db = tmp_path / "v.db"
    session = VotingSession(gold_engine, "gold", "ann")
    session.answer_questionnaire({"field": ["Science"], "subjects": ["arith", "chem"]})
    shown = []
    while (item := session.current()) is not None:
        shown.append((item.key, item.swapped, item.left.key, item.right.key))  # type: ignore[union-attr]
        session.vote("left", 3000)  # always the question shown first: a position voter
    keys = [k for k, *_ in shown]
    assert sorted(keys) == ["p1", "p1", "p2", "p2", "p3", "p3"]  # retest_share = 1
    for key in ("p1", "p2", "p3"):
        first, again = [s for s in shown if s[0] == key]
        assert again[1] is not first[1]  # the re-test shows the other side first
        assert (again[2], again[3]) == (first[3], first[2])
    stored = vote_rows(db)
    originals = [r for r in stored if r[4] is None]
    retests = [r for r in stored if r[4] is not None]
    assert len(originals) == len(retests) == 3
    original_uuid = dict(
        rows(
            db,
            "SELECT i.key, v.uuid FROM vote v JOIN item i ON i.id = v.item_id "
            "WHERE v.retest_of IS NULL",
        )
    )
    for item_key, choice, swapped, _, of in retests:
        orig = next(r for r in originals if r[0] == item_key)
        assert of == original_uuid[str(item_key)]  # retest_of names the vote it repeats
        # un-swapped: pressing "left" both times stores opposite choices of the item
        assert swapped != orig[2]
        assert choice != orig[1]
    # the current votes (what the fits read) hold each item once per annotator
    current = rows(
        db,
        "SELECT count(*), count(DISTINCT item_id) FROM current_vote v "
        "JOIN study s ON s.id = v.study_id WHERE s.name = 'gold'",
    )
    assert current == [(3, 3)]
    q = study_quality(gold_engine, "gold").of("ann")
    assert q is not None
    assert q.consistency is not None
    assert (q.consistency.n, q.consistency.hits, q.consistency.rate) == (3, 0, 0.0)


def test_one_retest_chain_per_annotator_and_item(gold_engine: Engine) -> None:
    session = VotingSession(gold_engine, "gold", "ann")
    session.answer_questionnaire({"field": ["Science"], "subjects": ["arith"]})
    receipt = session.vote("left", 3000)
    with Session(gold_engine) as s, s.begin():
        aid = repo.annotator_id(s, "ann", create=False)
        st = repo.get_study(s, "gold")
        assert aid is not None
        assert st is not None
        kw = {
            "study_id": st.id,
            "annotator": aid,
            "item_id": receipt.item_id,
            "choice": Choice.FIRST,
            "swapped": False,
            "response_ms": None,
            "fast": False,
            "supersedes": None,
        }
        repo.insert_vote(s, **kw, retest_of=receipt.vote_uuid)  # type: ignore[arg-type]
        # a second re-test chain on the same item
        with pytest.raises(IntegrityError), s.begin_nested():
            repo.insert_vote(s, **kw, retest_of=receipt.vote_uuid)  # type: ignore[arg-type]
        with pytest.raises(IntegrityError), s.begin_nested():  # a second original chain
            repo.insert_vote(s, **kw)  # type: ignore[arg-type]


def test_undo_of_a_retest_brings_it_back(gold_engine: Engine, tmp_path: Path) -> None:
    session = VotingSession(gold_engine, "gold", "ann")
    session.answer_questionnaire({"field": ["Science"], "subjects": ["arith"]})
    session.vote("left", 3000)  # p1 or p2
    session.vote("left", 3000)
    retest = session.current()
    assert retest is not None
    assert session.progress().done == 2
    session.vote("right", 3000)  # the re-test of the first item (retest_after = 1)
    assert session.undo()
    again = session.current()
    assert again is not None
    assert again.item_id == retest.item_id
    assert again.swapped == retest.swapped
    assert again.previous is not None
    session.vote("left", 3000)
    chains = rows(
        tmp_path / "v.db",
        "SELECT choice, supersedes IS NOT NULL FROM vote WHERE retest_of IS NOT NULL ORDER BY id",
    )
    assert [(c == "retract", sup) for c, sup in chains] == [
        (False, False),  # the re-test vote
        (True, True),  # undo: a retraction superseding it, in the re-test chain
        (False, True),  # the new re-test vote supersedes the retraction
    ]


def test_retest_selection_share_and_determinism() -> None:
    keys = [f"p{i}" for i in range(4000)]
    picked = [selected("s", "ann", 0, k, 0.1) for k in keys]
    assert picked == [selected("s", "ann", 0, k, 0.1) for k in keys]
    assert 0.08 < sum(picked) / len(keys) < 0.12  # binomial sd 0.0047


# --- gold accuracy and self-consistency by hand ---------------------------------------------


def test_quality_from_rows_by_hand() -> None:
    gold = [
        (1, 10, "first", "first"),
        (1, 11, "second", "first"),
        (1, 12, "skip", "first"),  # left out
        (2, 10, "first", "first"),
        (2, 13, "tie", "tie"),
    ]
    retests = [(1, 10, "first", "first"), (1, 11, "second", "first"), (2, 10, "skip", "first")]
    answers = [
        (1, "field", json.dumps(["Law"])),
        (2, "field", json.dumps(["Law"])),
        (2, "subjects", json.dumps(["arith", "chem"])),
    ]
    q = quality_from_rows(
        ["ann", "bob"],
        [1, 2],
        gold,
        retests,
        answers,
        questionnaire=[("field", ("Science", "Law")), ("subjects", ("arith", "chem"))],
        gold_items=4,
        retest_share=0.5,
    )
    ann, bob = q.annotators
    assert ann.gold is not None
    assert (ann.gold.n, ann.gold.hits) == (2, 1)
    assert bob.gold is not None
    assert (bob.gold.n, bob.gold.hits) == (2, 2)
    assert ann.consistency is not None
    assert (ann.consistency.n, ann.consistency.hits) == (2, 1)
    assert bob.consistency is None  # its only re-test pair has a skip
    assert bob.background == (("field", ("Law",)), ("subjects", ("arith", "chem")))
    law = next(g for g in q.groups if g.answer == "Law")
    assert law.annotators == ("ann", "bob")
    assert law.gold is not None
    assert (law.gold.n, law.gold.hits) == (4, 3)
    assert [g.answer for g in q.groups] == ["Law", "arith", "chem"]  # Science: nobody
    tables = quality_tables(q)
    assert [t.key for t in tables] == ["quality", "background"]


# --- the questionnaire, routing and the export ---------------------------------------------


def test_questionnaire_is_stored_once_and_routes_subjects(
    gold_engine: Engine, tmp_path: Path
) -> None:
    session = VotingSession(gold_engine, "gold", "ann")
    assert session.needs_questionnaire
    assert session.progress().total == 3
    with pytest.raises(ValueError, match="choose one"):
        session.answer_questionnaire({"field": ["Science", "[link=x]Law[/link]"], "subjects": []})
    session.answer_questionnaire({"field": ["[link=x]Law[/link]"], "subjects": ["chem"]})
    assert not session.needs_questionnaire
    assert session.excluded_subjects == {"arith"}  # routed: only the declared subject
    assert session.progress().total == 1
    assert not VotingSession(gold_engine, "gold", "ann").needs_questionnaire
    with pytest.raises(IntegrityError):  # asked once: a second answer is refused
        session.answer_questionnaire({"field": ["Science"], "subjects": ["chem"]})
    stored = rows(tmp_path / "v.db", "SELECT key, answer FROM annotatoranswer ORDER BY id")
    assert stored == [("field", '["[link=x]Law[/link]"]'), ("subjects", '["chem"]')]


def test_export_writes_gold_retests_and_answers(gold_engine: Engine, tmp_path: Path) -> None:
    session = VotingSession(gold_engine, "gold", "ann")
    session.answer_questionnaire({"field": ["Science"], "subjects": ["arith"]})
    while session.current() is not None:
        session.vote("left", 3000)
    out = export_votes(gold_engine, fmt="csv", out=tmp_path / "out", study="gold")
    names = {p.name for p in out.files}
    assert {"retests.csv", "annotators.csv", "votes.csv"} <= names
    votes_csv = (tmp_path / "out/votes.csv").read_text(encoding="utf-8").splitlines()
    assert len(votes_csv) == 1 + 2  # the re-tests are not in votes.csv
    retests = (tmp_path / "out/retests.csv").read_text(encoding="utf-8").splitlines()
    assert retests[0].endswith("supersedes,retest_of")
    assert len(retests) == 3
    answers = (tmp_path / "out/annotators.csv").read_text(encoding="utf-8")
    assert "gold,ann,field" in answers
    assert "Science" in answers
    pairs = (tmp_path / "out/studies/gold/pairs.csv").read_text(encoding="utf-8")
    assert pairs.splitlines()[0] == "pair_id,first,second,gold"
    # the exported study folder reads back the same (gold answers and questionnaire too)
    again = parse_study(tmp_path / "out/studies/gold")
    assert again.pairs == parse_study(GOLD).pairs
    assert again.settings == parse_study(GOLD).settings


# --- migration 008 on a database already at 005 ------------------------------------------------


def test_migration_008_adds_to_a_005_database(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript(SCHEMA_004.read_text(encoding="utf-8"))
    with con:
        con.execute(  # the schema of 004, marked as at 005 (its indexes are not needed here)
            "INSERT OR IGNORE INTO _migrations VALUES ('005_vote_unique_indexes', '2025')"
        )
        con.execute(
            "INSERT INTO study (id, name, kind, title, description, settings_json, fingerprint,"
            " created_at) VALUES (1, 's', 'difficulty', '', '', '{}', '', '2025-01-01')"
        )
        con.execute("INSERT INTO item (id, study_id, key, position) VALUES (1, 1, 'p1', 0)")
        con.execute("INSERT INTO annotator (id, name, created_at) VALUES (1, 'ann', '2025')")
        con.execute(
            "INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, fast,"
            " created_at) VALUES ('u1', 1, 1, 1, 'first', 0, 0, '2025-01-01 10:00:00')"
        )
    con.close()
    engine = open_store(db)
    engine.dispose()
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(vote)")]
    assert "retest_of" in cols
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    assert {"goldanswer", "annotatoranswer", "ux_vote_retest_root", "ux_vote_chain_root"} <= names
    chain = con.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'ux_vote_chain_root'"
    ).fetchone()[0]
    assert "retest_of IS NULL" in chain
    assert con.execute("SELECT uuid FROM current_vote").fetchall() == [("u1",)]
    with con:  # a re-test row beside the original: allowed, and not a current vote
        con.execute(
            "INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, fast,"
            " created_at, retest_of) VALUES ('u2', 1, 1, 1, 'second', 1, 0, '2025', 'u1')"
        )
    assert con.execute("SELECT uuid FROM current_vote").fetchall() == [("u1",)]
    con.close()


# --- shown in the monitor and the report ----------------------------------------------------


def vote_all(engine: Engine, annotator: str, key: str, field: str) -> None:
    session = VotingSession(engine, "gold", annotator)
    session.answer_questionnaire({"field": [field], "subjects": ["arith", "chem"]})
    while session.current() is not None:
        session.vote(key, 3000)


def test_monitor_and_report_show_the_checks(gold_engine: Engine, tmp_path: Path) -> None:
    from annotate.services.monitoring import monitor_snapshot
    from annotate.services.report import human_alignment_report
    from annotate.services.report_view import build_view

    vote_all(gold_engine, "ann", "left", "Science")  # a position voter: never consistent
    vote_all(gold_engine, "bob", "left", "[link=x]Law[/link]")
    snap = monitor_snapshot(gold_engine, "gold")
    ann = next(r for r in snap.annotators if r.annotator == "ann")
    assert ann.consistency is not None
    assert ann.consistency.rate == 0.0
    assert ann.gold is not None
    assert ann.gold.n == 2
    report = human_alignment_report(gold_engine, "gold", n_boot=0, parallel=False)
    doc = report.as_dict()["quality"]
    assert doc["gold_items"] == 2
    assert doc["retest_share"] == 1.0
    by = {a["annotator"]: a for a in doc["annotators"]}
    assert by["ann"]["self_consistency"]["hits"] == 0
    assert by["bob"]["background"] == {
        "field": ["[link=x]Law[/link]"],
        "subjects": ["arith", "chem"],
    }
    groups = {(g["key"], g["answer"]): g for g in doc["groups"]}
    assert groups[("field", "Science")]["annotators"] == ["ann"]
    assert groups[("subjects", "arith")]["annotators"] == ["ann", "bob"]
    assert groups[("subjects", "arith")]["self_consistency"]["n"] == 6
    from annotate.services.report_files import write_report

    md = (write_report(report, tmp_path / "rep", plots=False).folder / "report.md").read_text(
        encoding="utf-8"
    )
    assert "Annotators grouped by their questionnaire answers" in md
    assert "\\[link=x\\]Law\\[/link\\]" in md  # the hostile answer, literal
    assert "[link=x]" not in md.replace("\\[link=x\\]", "")
    keys = [t.key for t in build_view(report).tables]
    assert "quality" in keys
    assert "background" in keys


def test_retests_in_an_overlap_study_hold_no_slot_and_are_not_lost(tmp_path: Path) -> None:
    folder = copy_study(
        tmp_path,
        GOLD_ARENA,
        study_toml='name = "ga"\nkind = "arena"\n[settings]\noverlap = 1\n'
        "reveal_models = false\nretest_share = 1.0\nretest_after = 1\n",
    )
    engine = open_store(tmp_path / "o.db")
    import_paths(engine, [folder])
    ann, bob = VotingSession(engine, "ga", "ann"), VotingSession(engine, "ga", "bob")
    shown: dict[str, list[bool]] = {"ann": [], "bob": []}
    for _ in range(6):
        for s in (ann, bob):
            item = s.current()
            if item is None:
                continue
            s.keep_reservation()  # a re-test on screen renews no reservation
            shown[s.annotator].append(s._retest_shown is not None)
            s.vote("a", 3000)
    # three battles under a cap of one: every battle judged once (re-tests do not count
    # against the cap), and each annotator re-tested every battle they judged
    assert rows(tmp_path / "o.db", "SELECT count(*) FROM current_vote") == [(3,)]
    assert rows(tmp_path / "o.db", "SELECT count(*) FROM vote WHERE retest_of IS NOT NULL") == [
        (3,)
    ]
    assert sorted(shown["ann"] + shown["bob"]) == [False] * 3 + [True] * 3
    assert ann.current() is None
    assert bob.current() is None
    assert rows(tmp_path / "o.db", "SELECT count(*) FROM reservation") == [(0,)]
