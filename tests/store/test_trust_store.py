"""Issue 9, items 3, 7, 8 and 9 at the store: reservations, shared use, opening faults.

- Reservations: an item shown to one annotator counts against the cap for the others;
  a lapsed hold is honoured unless others filled the item; leaving frees it.
- Shared use: the writer lock file takes the database file's permission bits and group,
  a second Unix user in that group can vote, a lock file they cannot write is opened
  read-only; a lock wait ends after the stated time with one line naming the holder.
- Opening faults: each ends in one line naming the problem and the fix, and the database
  file is byte-identical afterwards; ``--db`` never creates folders.

Tests that need a second Unix user run only as root (they use ``nobody`` via setpriv).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from annotate.errors import VoteConflictError
from annotate.services import voting
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession
from annotate.store.errors import DatabaseError
from annotate.store.migrations import MIGRATIONS, migrate
from annotate.store.writelock import (
    LOCK_TIMEOUT_ENV,
    WriteLockTimeoutError,
    lock_path,
    writer_queue,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SYSTEM_PYTHON = Path(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def arena_study(folder: Path, *, overlap: int, battles: int = 1) -> Path:
    """An arena study of ``battles`` battles that allows undo."""
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        f'name = "held"\nkind = "arena"\n\n[settings]\noverlap = {overlap}\n'
        "reveal_models = false\n",
        encoding="utf-8",
    )
    (folder / "prompts.jsonl").write_text(
        "".join(f'{{"id": "p{i}", "text": "prompt {i}"}}\n' for i in range(battles)),
        encoding="utf-8",
    )
    (folder / "responses.jsonl").write_text(
        "".join(
            f'{{"prompt_id": "p{i}", "model": "{m}", "text": "{m} says {i}"}}\n'
            for i in range(battles)
            for m in ("x", "y")
        ),
        encoding="utf-8",
    )
    (folder / "battles.csv").write_text(
        "battle_id,prompt_id,model_a,model_b\n"
        + "".join(f"b{i},p{i},x,y\n" for i in range(battles)),
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def held_db(tmp_path: Path) -> Path:
    db = tmp_path / "held.db"
    engine = open_store(db)
    import_paths(engine, [arena_study(tmp_path / "held", overlap=1)])
    engine.dispose()
    return db


# --- reservations --------------------------------------------------------------------------


def current_votes(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute("SELECT count(*) FROM current_vote").fetchone()[0])


def test_an_item_shown_to_one_annotator_is_not_shown_to_another_over_the_cap(
    held_db: Path,
) -> None:
    engine = open_store(held_db)
    alice, bob = VotingSession(engine, "held", "alice"), VotingSession(engine, "held", "bob")
    assert alice.current() is not None  # alice holds the only slot of the only battle
    assert bob.current() is None  # so bob gets nothing
    alice.vote("a", 3000)
    bob.refresh()
    assert bob.current() is None
    assert current_votes(held_db) == 1


def test_leaving_frees_the_item(held_db: Path) -> None:
    engine = open_store(held_db)
    alice, bob = VotingSession(engine, "held", "alice"), VotingSession(engine, "held", "bob")
    assert alice.current() is not None
    alice.release()
    assert bob.current() is not None
    bob.vote("b", 3000)
    alice.refresh()
    assert alice.current() is None
    assert current_votes(held_db) == 1


def test_a_lapsed_hold_still_counts_while_the_item_has_room(
    held_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(voting, "RESERVATION_S", 0.05)
    engine = open_store(held_db)
    alice = VotingSession(engine, "held", "alice")
    assert alice.current() is not None
    time.sleep(0.1)  # away longer than the hold; nobody took the slot
    alice.vote("a", 3000)
    assert current_votes(held_db) == 1


def test_a_lapsed_hold_taken_by_another_refuses_with_one_line(
    held_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(voting, "RESERVATION_S", 0.05)
    engine = open_store(held_db)
    alice, bob = VotingSession(engine, "held", "alice"), VotingSession(engine, "held", "bob")
    assert alice.current() is not None
    time.sleep(0.1)
    assert bob.current() is not None  # the lapsed slot went to bob
    bob.vote("b", 3000)
    with pytest.raises(VoteConflictError, match="while you were away") as err:
        alice.vote("a", 3000)
    assert "\n" not in str(err.value)
    assert current_votes(held_db) == 1  # never over the cap


def test_a_vote_with_a_live_hold_always_counts(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    engine = open_store(db)
    import_paths(engine, [arena_study(tmp_path / "held", overlap=2)])
    sessions = [VotingSession(engine, "held", f"a{k}") for k in range(3)]
    shown = [s.current() for s in sessions]
    assert [x is not None for x in shown] == [True, True, False]  # the cap is 2
    for s in sessions[:2]:
        s.vote("a", 3000)
    assert current_votes(db) == 2


def test_migration_adds_the_reservation_table_to_an_older_database(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    open_store(db).dispose()
    with sqlite3.connect(db) as con:  # as version 002 left it
        con.execute("DROP TABLE reservation")
        con.execute("DROP TABLE itemnote")  # added by 004, after 003
        con.execute("DROP TABLE accesstoken")  # added by 006
        con.execute(  # 003 and every later migration (007, 008, ...) not yet applied
            "DELETE FROM _migrations WHERE name NOT IN ('001_baseline', '002_current_vote_view')"
        )
    engine = open_store(db)
    with engine.connect() as c:
        names = [r[0] for r in c.execute(text("SELECT name FROM _migrations ORDER BY rowid"))]
        assert c.execute(text("SELECT count(*) FROM reservation")).scalar() == 0
    assert names == [n for n, _ in MIGRATIONS]
    assert migrate(engine) == []


# --- the writer lock: mode, group, second user, timeout ------------------------------------


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder other users can reach (pytest's tmp_path is private to its owner)."""
    folder = Path(tempfile.mkdtemp(prefix="annotate-shared-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _other_user_ok() -> str | None:
    if os.geteuid() != 0:
        return "needs root to run a second user (nobody)"
    if shutil.which("setpriv") is None or not SYSTEM_PYTHON.exists():
        return f"needs setpriv and {SYSTEM_PYTHON}"
    return None


def run_as_nobody(code: str, *, groups: list[int]) -> subprocess.CompletedProcess[str]:
    """Run Python ``code`` as user ``nobody`` with the given supplementary groups."""
    site = sysconfig.get_paths()["purelib"]
    cmd = [
        "setpriv",
        "--reuid=nobody",
        "--regid=nogroup",
        f"--groups={','.join(str(g) for g in groups)}" if groups else "--clear-groups",
        "env",
        f"PYTHONPATH={ROOT}:{site}",
        "HOME=/tmp",
        "ANNOTATE_DATA_DIR=/tmp/annotate-nobody-data",
        str(SYSTEM_PYTHON),
        "-c",
        textwrap.dedent(code),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


VOTE_AS_OTHER = """
    import sys
    from pathlib import Path
    from annotate.errors import AnnotateError
    from annotate.services.db import open_store
    from annotate.services.voting import VotingSession
    try:
        s = VotingSession(open_store(Path(sys.argv[1] if len(sys.argv) > 1 else {db!r})),
                          "tiny-arena", "second-user")
        s.vote("a", 3000)
    except AnnotateError as err:
        print("ERROR", err)
        raise SystemExit(1)
    print("voted")
"""


def test_lock_file_takes_the_database_mode_and_group(shared_dir: Path) -> None:
    db = shared_dir / "votes.db"
    import_paths(open_store(db), [DATA / "studies" / "tiny-arena"])
    gid = 100 if os.geteuid() == 0 else os.getgid()  # root: the 'users' group
    os.chown(db, -1, gid)
    db.chmod(0o660)
    lock_path(db).unlink()
    with writer_queue(db):
        pass
    st = lock_path(db).stat()
    assert stat.S_IMODE(st.st_mode) == 0o660  # not 0644 whatever the umask
    assert st.st_gid == gid


def test_a_second_user_in_the_group_can_vote(shared_dir: Path) -> None:
    if reason := _other_user_ok():
        pytest.skip(reason)
    shared_dir.chmod(0o2775)
    os.chown(shared_dir, -1, 100)
    db = shared_dir / "votes.db"
    engine = open_store(db)  # the first user (root) creates the database and lock file
    import_paths(engine, [DATA / "studies" / "tiny-arena"])
    VotingSession(engine, "tiny-arena", "first-user").vote("a", 3000)
    engine.dispose()
    os.chown(db, -1, 100)
    db.chmod(0o660)
    for f in (lock_path(db), Path(f"{db}-wal"), Path(f"{db}-shm")):
        if f.exists():
            os.chown(f, -1, 100)
            f.chmod(0o660)
    done = run_as_nobody(VOTE_AS_OTHER.format(db=str(db)), groups=[100])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "voted" in done.stdout
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM current_vote").fetchone()[0] == 2


def test_a_lock_file_the_user_cannot_write_is_opened_read_only(shared_dir: Path) -> None:
    if reason := _other_user_ok():
        pytest.skip(reason)
    shared_dir.chmod(0o777)
    db = shared_dir / "votes.db"
    engine = open_store(db)
    import_paths(engine, [DATA / "studies" / "tiny-arena"])
    engine.dispose()
    for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if f.exists():
            f.chmod(0o666)
    lock_path(db).chmod(0o644)  # as the old code made it: root's, not writable by others
    done = run_as_nobody(VOTE_AS_OTHER.format(db=str(db)), groups=[])
    assert done.returncode == 0, done.stdout + done.stderr


HOLD_LOCK = """
import sys, time
from annotate.store.writelock import writer_queue
with writer_queue(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_lock_wait_ends_with_one_line_naming_the_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "busy.db"
    engine = open_store(db)
    import_paths(engine, [DATA / "studies" / "tiny-arena"])
    session = VotingSession(engine, "tiny-arena", "waiting")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv(LOCK_TIMEOUT_ENV, "0.5")
        before = sha256(db)
        t0 = time.monotonic()
        with pytest.raises(WriteLockTimeoutError) as err:
            session.vote("a", 3000)
        waited = time.monotonic() - t0
    finally:
        holder.kill()
        holder.wait()
    message = str(err.value)
    assert "\n" not in message
    assert f"pid {holder.pid}" in message
    assert "busy" in message
    assert LOCK_TIMEOUT_ENV in message
    assert 0.5 <= waited < 5
    assert sha256(db) == before
    monkeypatch.delenv(LOCK_TIMEOUT_ENV)
    session.vote("a", 3000)  # the holder died: its lock went with it
    assert current_votes(db) == 1


# --- opening faults ------------------------------------------------------------------------


def _valid_db(tmp_path: Path) -> Path:
    db = tmp_path / "ok.db"
    import_paths(open_store(db), [DATA / "studies" / "tiny-arena"])
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def _truncated(tmp_path: Path) -> Path:
    src = _valid_db(tmp_path)
    data = src.read_bytes()
    bad = tmp_path / "truncated.db"
    bad.write_bytes(data[: len(data) // 2])
    return bad


def _garbage_with_header(tmp_path: Path) -> Path:
    src = _valid_db(tmp_path)
    data = bytearray(src.read_bytes())
    data[100:] = os.urandom(len(data) - 100)  # schema and every table page destroyed
    bad = tmp_path / "garbage.db"
    bad.write_bytes(bytes(data))
    return bad


def _newer(tmp_path: Path) -> Path:
    db = _valid_db(tmp_path)
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO _migrations (name) VALUES ('999_from_the_future')")
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def _csv(tmp_path: Path) -> Path:
    f = tmp_path / "votes.csv"
    f.write_text("vote_id,study,annotator,item_id,choice\n1,s,a,b1,model_a\n", encoding="utf-8")
    return f


def _random(tmp_path: Path) -> Path:
    f = tmp_path / "random.db"
    f.write_bytes(b"\x00\xff" + os.urandom(8190))
    return f


FAULTS = {
    "a folder": (lambda p: p, "is a folder"),
    "a CSV file": (_csv, "text file"),
    "random bytes": (_random, "not a SQLite database"),
    "a truncated database": (_truncated, "truncated"),
    "a corrupt database": (_garbage_with_header, "damaged"),
    "a newer schema": (_newer, "newer version of annotate"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_opening_fault_is_one_line_and_leaves_the_file_unchanged(
    tmp_path: Path, fault: str
) -> None:
    make, words = FAULTS[fault]
    target = make(tmp_path)
    before = None if target.is_dir() else sha256(target)
    with pytest.raises(DatabaseError) as err:
        open_store(target)
    message = str(err.value)
    assert words in message
    assert "\n" not in message
    assert str(target) in message
    if before is not None:
        assert sha256(target) == before


@pytest.mark.parametrize("fault", ["a folder", "a CSV file", "a corrupt database"])
def test_cli_prints_an_opening_fault_as_one_line(tmp_path: Path, fault: str) -> None:
    make, words = FAULTS[fault]
    target = make(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "annotate", "studies", "--db", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert words in done.stderr


def test_db_in_a_missing_folder_creates_no_folder(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "folder" / "votes.db"
    with pytest.raises(DatabaseError, match="does not exist") as err:
        open_store(target)
    assert "mkdir -p" in str(err.value)
    assert not (tmp_path / "no").exists()


def test_only_the_default_database_folder_is_created(tmp_path: Path) -> None:
    # conftest points ANNOTATE_DATA_DIR at a folder that does not exist yet
    engine = open_store()
    assert Path(str(engine.url.database)).parent.is_dir()
    engine.dispose()


def test_an_empty_named_database_gets_no_demo(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "research.db")
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM study")).scalar() == 0


READ_ONLY_VOTE = """
    from pathlib import Path
    from annotate.errors import AnnotateError
    from annotate.services.db import open_store
    from annotate.services.voting import VotingSession
    try:
        VotingSession(open_store(Path({db!r})), "tiny-arena", "reader").vote("a", 3000)
    except AnnotateError as err:
        print(type(err).__name__, err)
        raise SystemExit(1)
    print("voted")
"""


@pytest.mark.parametrize("what", ["file", "folder"])
def test_voting_on_a_read_only_database_is_one_line(shared_dir: Path, what: str) -> None:
    if reason := _other_user_ok():
        pytest.skip(reason)  # root writes read-only files anyway
    db = _valid_db(shared_dir)
    for f in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        f.unlink(missing_ok=True)
    if what == "file":
        shared_dir.chmod(0o777)
        db.chmod(0o444)
    else:
        db.chmod(0o666)
        shared_dir.chmod(0o755)  # nobody cannot create the -wal and -shm files
    before = sha256(db)
    done = run_as_nobody(READ_ONLY_VOTE.format(db=str(db)), groups=[])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout
    assert lines[0].startswith("DatabaseError"), done.stdout
    assert "read-only" in lines[0] or "not writable" in lines[0]
    assert sha256(db) == before
