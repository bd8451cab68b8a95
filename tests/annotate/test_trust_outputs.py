"""Issue 9 on the command line: every output sanitised, every file under the chosen folder,
every failure one line, and self-identifying battles reported and left out of ratings.

The central test imports a study whose every name and text field carries escape
sequences (SGR, OSC 0 title, OSC 52 clipboard, OSC 8 link, C1 CSI, BEL, bidi
override), runs every command through both entry points (the console script and
``python -m annotate``) and greps stdout, stderr, report.md and every report CSV for
ESC, other C0 and C1 controls and bidirectional overrides.

Vote exports (``annotate export``: ``votes``, ``vote_log``, ``items``, ``studies/``)
are data for lossless round trips and are kept exact on purpose: they are checked
to re-import as the same study instead.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from annotate.cli import main
from annotate.cli.output import describe_error, json_text
from annotate.errors import AnnotateError
from annotate.names import sanitize
from annotate.services.db import open_store
from annotate.services.identity import IdentityDetector, self_identifying_battles
from annotate.services.importing import import_paths
from annotate.services.monitoring import monitor_snapshot
from annotate.services.paths import OutsideOutputError, inside
from annotate.store import repo
from annotate.store.models import Annotator

VENV_BIN = Path(sys.executable).parent
EVIL = (
    "\x1b[31mRED\x1b[0m"  # SGR colour
    "\x1b]0;pwned-title\x07"  # OSC 0: window title, BEL-terminated
    "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: write the clipboard
    "\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\"  # OSC 8 hyperlink
    "\x9b2J"  # C1 CSI: clear screen
    "\x07\x08"  # BEL, backspace
    "\u202eevil\u202c"  # bidi override
    "\x85"  # C1 NEL
)
BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029}


def bad_chars(text: str, *, allow: str = "\n\t") -> list[str]:
    """Control characters in ``text`` (C0 other than ``allow``, DEL, C1, bidi controls)."""
    out = []
    for ch in text:
        c = ord(ch)
        if ch in allow:
            continue
        if c < 0x20 or c == 0x7F or 0x80 <= c < 0xA0 or c in BIDI:
            out.append(f"U+{c:04X}")
    return out


def assert_clean(text: str | bytes, where: str, *, allow: str = "\n\t") -> None:
    if isinstance(text, bytes):
        assert b"\x1b" not in text, f"raw ESC byte in {where}"
        text = text.decode("utf-8")
    found = bad_chars(text, allow=allow)
    assert not found, f"{where} holds control characters {sorted(set(found))}"


# --- the poisoned studies -------------------------------------------------------


def _write_csv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _jsonl(path: Path, recs: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")


def _toml(name: str, kind: str, settings: str = "") -> str:
    return (
        f"name = {json.dumps(name)}\nkind = {json.dumps(kind)}\n"
        f"title = {json.dumps('Title ' + EVIL)}\ndescription = {json.dumps('About ' + EVIL)}\n"
        f"{settings}"
    )


ARENA_MODELS = [f"alpha{EVIL}", f"beta{EVIL}", f"gamma{EVIL}"]


def make_arena(root: Path) -> Path:
    d = root / "evil-arena"
    d.mkdir()
    (d / "study.toml").write_text(
        _toml("evil-arena", "arena", "\n[settings]\noverlap = 0\n"), encoding="utf-8"
    )
    prompts = [f"p{i}{EVIL}" for i in range(3)]
    _jsonl(
        d / "prompts.jsonl",
        [{"id": p, "text": f"Prompt {EVIL}", "category": f"cat{EVIL}"} for p in prompts],
    )
    responses = []
    for i, p in enumerate(prompts):
        for j, m in enumerate(ARENA_MODELS):
            text = f"Answer {EVIL}"
            if i == 0 and j == 0:
                text = "Hello! I am Claude, and " + EVIL  # self-identifying
            responses.append({"prompt_id": p, "model": m, "text": text})
    _jsonl(d / "responses.jsonl", responses)
    battles = []
    for i, p in enumerate(prompts):
        for a in range(3):
            for b in range(a + 1, 3):
                battles.append([f"b{i}{a}{b}{EVIL}", p, ARENA_MODELS[a], ARENA_MODELS[b]])
    _write_csv(d / "battles.csv", ["battle_id", "prompt_id", "model_a", "model_b"], battles)
    return d


def make_difficulty(root: Path) -> Path:
    d = root / "evil-diff"
    d.mkdir()
    (d / "study.toml").write_text(_toml("evil-diff", "difficulty"), encoding="utf-8")
    subjects = [f"subj{EVIL}", f"other{EVIL}"]
    qs = [f"q{i}{EVIL}" for i in range(8)]
    _jsonl(
        d / "questions.jsonl",
        [
            {"id": q, "subject": subjects[i % 2], "text": f"Question {EVIL}"}
            for i, q in enumerate(qs)
        ],
    )
    pairs = [[f"pair{k}{EVIL}", qs[k], qs[k + 2]] for k in range(6)]
    _write_csv(d / "pairs.csv", ["pair_id", "first", "second"], pairs)
    models = [f"model{j}{EVIL}" for j in range(4)]
    scores = [[q, m, int((i + j) % 3 == 0)] for i, q in enumerate(qs) for j, m in enumerate(models)]
    _write_csv(d / "responses.csv", ["question_id", "model", "score"], scores)
    _write_csv(
        d / "models.csv",
        ["model", "pool"],
        [[m, f"pool{j % 2}{EVIL}"] for j, m in enumerate(models)],
    )
    return d


def add_votes(engine: Engine, study: str, annotators: list[str], choices: list[str]) -> None:
    """Votes straight into the store (annotator names bypass the import's name rules)."""
    with Session(engine) as s, s.begin():
        st = repo.get_study(s, study)
        assert st is not None
        items = sorted(repo.item_ids(s, st.id).values())
        for k, name in enumerate(annotators):
            # Written as an older database (or another tool) may hold them.
            aid = s.exec(select(Annotator.id).where(Annotator.name == name)).first()
            if aid is None:
                s.add(Annotator(name=name))
                s.flush()
                aid = s.exec(select(Annotator.id).where(Annotator.name == name)).one()
            assert aid is not None
            for n, item in enumerate(items):
                repo.insert_vote(
                    s,
                    study_id=st.id,
                    annotator=aid,
                    item_id=item,
                    choice=choices[(n + k * (n % 2)) % len(choices)],
                    swapped=bool(n % 2),
                    response_ms=3000 + 10 * n,
                    fast=False,
                    supersedes=None,
                )


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(database, folder of the study folders, a response matrix CSV), every name poisoned."""
    root = tmp_path_factory.mktemp("poisoned")
    studies = root / "studies"
    studies.mkdir()
    make_arena(studies)
    make_difficulty(studies)
    db = root / "v.db"
    engine = open_store(db)
    import_paths(engine, [studies / "evil-arena", studies / "evil-diff"])
    annotators = [f"ann{k}{EVIL}" for k in range(4)]
    add_votes(engine, "evil-arena", annotators, ["model_a", "model_b", "tie", "model_a"])
    add_votes(engine, "evil-diff", annotators, ["first", "second", "first", "skip"])
    engine.dispose()
    matrix = root / "matrix.csv"
    _write_csv(
        matrix,
        ["question_id", "model", "score"],
        [[f"q{i}{EVIL}", f"m{j}{EVIL}", int((i * j) % 3 == 1)] for i in range(6) for j in range(4)],
    )
    return db, studies, matrix


ENTRY_POINTS = {
    "script": [str(VENV_BIN / "annotate")],
    "module": [sys.executable, "-m", "annotate"],
}


def run_cli(entry: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "ANNOTATE_DATA_DIR": str(cwd / "data"), "PYTHONIOENCODING": "utf-8"}
    env.pop("ANNOTATE_DEBUG", None)
    return subprocess.run(
        [*ENTRY_POINTS[entry], *args], capture_output=True, cwd=cwd, env=env, timeout=300
    )


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_output_is_free_of_escape_sequences(
    entry: str, poisoned: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    src_db, studies, matrix = poisoned
    db = tmp_path / "v.db"
    shutil.copy(src_db, db)
    d = str(db)
    # A vote file whose annotator ids and item keys carry escapes: it is either imported
    # (and then sanitised on every output) or refused in one sanitised line.
    votes = tmp_path / "votes.csv"
    _write_csv(
        votes,
        list(repo.VOTE_COLUMNS),
        [
            [
                "6f1d3c1e-0000-4000-8000-000000000001",
                "evil-arena",
                "arena",
                f"voter{EVIL}",
                f"b001{EVIL}",
                "model_a",
                ARENA_MODELS[0],
                "2500",
                "false",
                "2024-01-01T00:00:00Z",
                "",
            ]
        ],
    )
    fresh = tmp_path / "fresh.db"
    commands: dict[str, list[str]] = {
        "import": [
            "import",
            "--db",
            str(fresh),
            str(studies / "evil-arena"),
            str(studies / "evil-diff"),
        ],
        "import --json": [
            "import",
            "--db",
            str(tmp_path / "f2.db"),
            "--json",
            str(studies / "evil-arena"),
        ],
        "import votes": ["import", "--db", d, str(votes)],
        "studies": ["studies", "--db", d],
        "studies --json": ["studies", "--db", d, "--json"],
        "export": ["export", "--db", d, "--out", str(tmp_path / "exp")],
        "rank": ["rank", "eip", str(matrix), "--out", str(tmp_path / "rank")],
        "rank --json": ["rank", "simple", str(matrix), "--json"],
        "rate": ["rate", "--db", d, "--study", "evil-arena", "--delta", "2", "--epsilon", "0"],
        "rate --json": ["rate", "--db", d, "--study", "evil-arena", "--json", "--method", "m-elo"],
        "report": [
            "report",
            "--db",
            d,
            "--study",
            "evil-diff",
            "--boot",
            "20",
            *(["--no-plots"] if entry == "module" else []),
        ],
        "report --json": [
            "report",
            "--db",
            d,
            "--study",
            "evil-diff",
            "--boot",
            "0",
            "--no-plots",
            "--json",
            "--out",
            str(tmp_path / "rep2"),
        ],
        "unknown study": ["rate", "--db", d, "--study", f"x{EVIL}"],
    }
    if entry == "module":  # the same code: the module entry point runs the costly half
        for name in ("import --json", "rank --json", "report --json", "studies --json"):
            del commands[name]
    runs = {name: run_cli(entry, *argv, cwd=tmp_path) for name, argv in commands.items()}
    for name, res in runs.items():
        assert b"Traceback" not in res.stderr, f"{name}: {res.stderr.decode()}"
        assert_clean(res.stdout, f"{name} stdout")
        assert_clean(res.stderr, f"{name} stderr")
        expect_fail = name in ("unknown study",)
        if name != "import votes":
            assert (res.returncode != 0) == expect_fail, f"{name}: {res.stderr.decode()}"
        if res.returncode:
            assert res.stderr.decode().count("\n") == 1, f"{name}: {res.stderr.decode()}"
    # The escapes were there and are shown as placeholders, not dropped.
    assert "␛[31mRED" in runs["studies"].stdout.decode()
    assert "⟨U+009B⟩" in runs["rate"].stdout.decode()
    # JSON is exact: it decodes to the very names stored.
    if "studies --json" in runs:
        rows = json.loads(runs["studies --json"].stdout)
        assert {r["title"] for r in rows} == {"Title " + EVIL}
    rated = json.loads(runs["rate --json"].stdout)
    # (the importer trims surrounding whitespace, which for Python includes NEL U+0085)
    assert {m["model"] for m in rated["models"]} == {m.strip() for m in ARENA_MODELS}
    assert rated["excluded_self_identifying"] == 2  # both battles showing alpha's answer to p0
    assert "self-identifying" in runs["import"].stdout.decode() or "names a model" in (
        runs["import"].stdout.decode()
    )
    # Report files: report.md and every CSV, at the default place under exports/.
    report_dir = tmp_path / "exports" / "report-evil-diff"
    written = sorted(p for p in report_dir.rglob("*") if p.is_file())
    assert report_dir / "report.md" in written
    assert [p for p in written if p.suffix == ".csv"]
    for p in written:
        if p.suffix == ".png":
            continue
        assert_clean(p.read_bytes(), str(p), allow="\n\t\r")
    for p in [*(tmp_path / "rank").rglob("*.csv"), *(tmp_path / "rep2").rglob("*.csv")]:
        assert_clean(p.read_bytes(), str(p), allow="\n\t\r")
    # Vote exports are data: exact (the importer trims keys like every name, and today's
    # import refuses such annotator names, so these votes only exist in old databases).
    exp = tmp_path / "exp"
    assert EVIL.strip() in (exp / "items.csv").read_text(encoding="utf-8")
    assert f"ann0{EVIL}" in (exp / "vote_log.csv").read_text(encoding="utf-8")
    # The exported study folders re-import as the same studies.
    back = run_cli(
        entry,
        "import",
        "--db",
        str(tmp_path / "back.db"),
        str(exp / "studies" / "evil-arena"),
        str(exp / "studies" / "evil-diff"),
        "--json",
        cwd=tmp_path,
    )
    assert back.returncode == 0, back.stderr.decode()
    assert set(json.loads(back.stdout)["studies_created"]) == {"evil-arena", "evil-diff"}


def test_monitor_snapshot_values_are_sanitised(poisoned: tuple[Path, Path, Path]) -> None:
    db, _, _ = poisoned
    engine = open_store(db)
    for study in ("evil-arena", "evil-diff"):
        snap = monitor_snapshot(engine, study)
        texts = [snap.title, snap.problem or "", *snap.notes]
        for a in snap.annotators:
            texts += [a.annotator, a.reason, *a.alerts]
        for r in snap.leaderboard:
            texts += [r.name, r.detail]
        assert snap.annotators
        for t in texts:
            assert_clean(t, f"monitor {study}")
    arena = monitor_snapshot(engine, "evil-arena")
    assert any("names a model" in n for n in arena.notes)


def test_json_output_escapes_every_control_and_decodes_exactly() -> None:
    value = {"name": EVIL + "\ud800\x7f", "n": 1}
    out = json_text(value)
    assert_clean(out, "json")
    assert "\ud800" not in out
    assert json.loads(out) == value


def test_say_and_error_lines_are_sanitised(capsys: pytest.CaptureFixture[str]) -> None:
    from annotate.cli.output import say, table

    say(table([[EVIL, 1]], ["name", "n"]))
    out = capsys.readouterr().out
    assert_clean(out, "table")
    assert out.count("\n") == 3
    _, code = describe_error(AnnotateError(f"bad {EVIL}"))
    assert code == 1
    _, code = describe_error(TypeError("a bug"))
    assert code == 70


# --- every file stays under the folder the user chose ----------------------------


def _rename_study(db: Path, old: str, new: str) -> None:
    """A hostile name written straight into the database, bypassing import validation."""
    with sqlite3.connect(db) as con:
        con.execute("UPDATE study SET name = ? WHERE name = ?", (new, old))


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("hostile", ["/abs/dir", "../../../X", "..", "a/../../b", "x\x00y"])
def test_export_refuses_a_study_name_that_is_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hostile: str
) -> None:
    db = tmp_path / "data" / "v.db"
    db.parent.mkdir()
    import_paths(open_store(db), [make_arena(tmp_path)])
    hostile = hostile.replace("/abs", str(tmp_path / "abs"))
    _rename_study(db, "evil-arena", hostile)
    out = tmp_path / "work" / "out"
    out.parent.mkdir()
    before = _files(tmp_path)
    code = main(["export", "--db", str(db), "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.count("\n") == 1
    assert "not inside the output folder" in err
    assert_clean(err, "stderr")
    new = _files(tmp_path) - before
    outside = [p for p in new if out.resolve() not in p.resolve().parents and p != db]
    assert not [p for p in outside if not p.name.startswith("v.db")], outside


@pytest.mark.parametrize("hostile", ["/abs/dir", "../../../X"])
def test_report_refuses_a_study_name_that_is_a_path(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    hostile: str,
) -> None:
    db = tmp_path / "v.db"
    engine = open_store(db)
    import_paths(engine, [make_difficulty(tmp_path)])
    add_votes(engine, "evil-diff", ["a", "b", "c"], ["first", "second"])
    engine.dispose()
    hostile = hostile.replace("/abs", str(tmp_path / "abs"))
    _rename_study(db, "evil-diff", hostile)
    work = tmp_path / "deep" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    before = _files(tmp_path)
    code = main(["report", "--db", str(db), "--study", hostile, "--boot", "0", "--no-plots"])
    _, err = capsys.readouterr()
    assert code == 1, err
    assert err.count("\n") == 1
    assert "not inside the output folder" in err
    new = {p for p in _files(tmp_path) - before if not p.name.startswith("v.db")}
    assert all((work / "exports").resolve() in p.resolve().parents for p in new), new


def test_inside_resolves_and_refuses() -> None:
    base = Path.cwd()
    assert inside(base, "a", "b") == base.resolve() / "a" / "b"
    for parts in [("..",), ("a", ".."), ("/etc",), ("a/b",), ("",), (".",), ("a\\b",)]:
        with pytest.raises(OutsideOutputError):
            inside(base, *parts)


def test_inside_refuses_a_symlink_out(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "base" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutsideOutputError):
        inside(tmp_path / "base", "link", "x.csv")


def test_export_out_pointing_at_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "file.txt"
    target.write_text("keep me\n")
    code = main(["export", "--db", str(tmp_path / "v.db"), "--out", str(target)])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.count("\n") == 1
    assert "is a file, not a folder" in err
    assert target.read_text() == "keep me\n"


def test_rank_out_pointing_at_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], poisoned: tuple[Path, Path, Path]
) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    code = main(["rank", "simple", str(poisoned[2]), "--out", str(target)])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.count("\n") == 1


# --- self-identifying responses ------------------------------------------------------


def test_detector_names_phrases_and_short_names() -> None:
    d = IdentityDetector(["gpt-4", "claude-3-opus", "a", "base", "meta-llama/Llama-2-7b"])
    assert d.find("As GPT-4, I would say") == "gpt-4"
    assert d.find("I'm Claude.") is not None
    assert d.find("the Llama-2-7b model") is not None
    assert d.find("llamas are animals") is None  # word boundary
    assert d.find("a gpt-4o answer") is None
    assert d.find("A base case and a plan") is None  # 'a' and 'base' are too generic
    assert d.find("I was trained by\nGoogle.") == "trained by Google"
    assert set(d.skipped) == {"a", "base"}
    assert IdentityDetector([], extra_phrases=["Acme Bot"]).find("acme  bot here") == "Acme Bot"


def test_rate_leaves_self_identifying_battles_out_by_default(
    poisoned: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(poisoned[0])
    m = ["--method", "m-elo"]
    assert main(["rate", "--db", db, "--study", "evil-arena", "--json", *m]) == 0
    default = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "rate",
                "--db",
                db,
                "--study",
                "evil-arena",
                "--json",
                *m,
                "--include-self-identifying",
            ]
        )
        == 0
    )
    kept = json.loads(capsys.readouterr().out)
    assert default["excluded_self_identifying"] == 2
    assert default["excluded_self_identifying_votes"] == 8  # 4 annotators x 2 battles
    assert kept["excluded_self_identifying"] == 0
    assert kept["n_battles"] == default["n_battles"] + 8
    assert main(["rate", "--db", db, "--study", "evil-arena", *m]) == 0
    text = capsys.readouterr().out
    assert "left out 2 battle(s)" in text
    # A phrase from the command line marks more battles: every other response starts
    # with "Answer", so every battle is left out and rating says so in one line.
    assert main(["rate", "--db", db, "--study", "evil-arena", "--identity-phrase", "Answer"]) == 1
    err = capsys.readouterr().err
    assert "--include-self-identifying" in err
    assert err.count("\n") == 1


def test_study_setting_identity_phrases(tmp_path: Path) -> None:
    d = make_arena(tmp_path)
    toml = (d / "study.toml").read_text()
    (d / "study.toml").write_text(
        toml.replace("overlap = 0", 'overlap = 0\nidentity_phrases = ["Answer"]')
    )
    engine = open_store(tmp_path / "v.db")
    report = import_paths(engine, [d])
    scan = self_identifying_battles(engine, "evil-arena")
    assert len(scan) == 9  # every battle has an "Answer ..." response
    assert any("names a model" in n for n in report.notes)


def test_import_reports_self_identifying_battles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["import", "--db", str(tmp_path / "v.db"), str(make_arena(tmp_path))])
    out = capsys.readouterr().out
    assert code == 0
    assert "2 battle(s) with a response that names a model or its maker" in out
    assert_clean(out, "import")


def test_sanitize_is_idempotent_on_placeholders() -> None:
    assert sanitize(sanitize(EVIL)) == sanitize(EVIL)
