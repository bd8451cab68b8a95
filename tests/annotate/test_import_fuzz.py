"""Property tests: mutating valid files never makes an import end in a traceback.

Whatever the mutation, the importer either loads the file or raises an
InputFileError naming the file, and a failed import leaves the database unchanged.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate.errors import InputFileError
from annotate.services.db import open_store
from annotate.services.importing import import_paths

DATA = Path(__file__).resolve().parent.parent / "data"
STUDY_FILES = {
    "tiny-difficulty": ["study.toml", "questions.jsonl", "pairs.csv", "responses.csv"],
    "tiny-arena": ["study.toml", "prompts.jsonl", "responses.jsonl", "battles.csv"],
}
FORMAT_FILES = [
    "arena_battles.jsonl",
    "arena_battles.csv",
    "arena_battles.json",
    "llmfao_sample.csv",
    "arena_minimal.csv",
]

mutation = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.integers(1, 40)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.binary(min_size=1, max_size=20)),
    st.tuples(st.just("replace"), st.integers(0, 10_000), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("truncate"), st.integers(0, 10_000), st.just(b"")),
    st.tuples(st.just("dup-line"), st.integers(0, 50), st.just(b"")),
    st.tuples(
        st.just("swap-chars"),
        st.integers(0, 10_000),
        st.sampled_from(
            [b",", b'"', b"{", b"}", b"\n", b"\x00", b"\xff", b"1.5", b"-1", b"NaN", b"[]"]
        ),
    ),
)


def mutate(data: bytes, op: tuple[str, int, object]) -> bytes:
    kind, pos, arg = op
    n = max(len(data), 1)
    i = pos % n
    if kind == "delete":
        return data[:i] + data[i + int(arg) :]  # type: ignore[call-overload]
    if kind == "insert":
        return data[:i] + arg + data[i:]  # type: ignore[operator]
    if kind in ("replace", "swap-chars"):
        b = arg  # type: ignore[assignment]
        return data[:i] + b + data[i + len(b) :]  # type: ignore[arg-type,operator]
    if kind == "truncate":
        return data[:i]
    lines = data.split(b"\n")
    j = pos % len(lines)
    return b"\n".join([*lines[: j + 1], lines[j], *lines[j + 1 :]])


def check(db: Path, target: list[Path]) -> None:
    engine = open_store(db)
    engine.dispose()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    engine = open_store(db)
    try:
        import_paths(engine, target)
    except InputFileError as err:
        message = str(err)
        engine.dispose()
        assert message.strip()
        assert "\n" not in message
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    else:
        engine.dispose()


@settings(
    max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    study=st.sampled_from(sorted(STUDY_FILES)),
    which=st.integers(0, 3),
    ops=st.lists(mutation, min_size=1, max_size=3),
)
def test_mutated_study_files(study: str, which: int, ops: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / study
        shutil.copytree(DATA / "studies" / study, folder)
        f = folder / STUDY_FILES[study][which]
        data = f.read_bytes()
        for op in ops:
            data = mutate(data, op)
        f.write_bytes(data)
        check(Path(tmp) / "v.db", [folder])


@settings(
    max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(name=st.sampled_from(FORMAT_FILES), ops=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_third_party_files(name: str, ops: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / name
        data = (DATA / "formats" / name).read_bytes()
        for op in ops:
            data = mutate(data, op)
        f.write_bytes(data)
        check(Path(tmp) / "v.db", [f])
