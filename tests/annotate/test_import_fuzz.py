"""Property tests: mutating valid files never makes an import end in a traceback.

Whatever the mutation, the importer either loads the file or raises an
InputFileError naming the file, and a failed import leaves the database unchanged.

The mutations include the inputs that once crashed the importer (issue 9): lone
surrogates (``\\ud800``), infinite and huge numbers, timestamps that overflow in
UTC, a CSV holding only a byte-order mark, deeply nested JSON and NUL bytes.
``FUZZ_EXAMPLES`` bounds the examples per test (60 by default, as in CI).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from annotate.errors import InputFileError
from annotate.services.db import open_store
from annotate.services.exporting import export_votes
from annotate.services.importing import import_paths
from annotate.services.voting import VotingSession

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

CRASH_BYTES = [
    b'"\\ud800"',
    b"\\udfff",
    b"1e309",
    b"-1e309",
    b"inf",
    b"NaN",
    b"9223372036854775808",
    b"9" * 5000,
    b"9999-12-31T23:00:00-05:00",
    b"0001-01-01T00:00:00+05:00",
    b"[" * 3000,
    b"[" * 3000 + b"]" * 3000,
    b"\xef\xbb\xbf",
    b"\x00",
]
"""Byte strings that once ended an import in a traceback (issue 9, item 8)."""

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
    st.tuples(st.just("crash"), st.integers(0, 10_000), st.sampled_from(CRASH_BYTES)),
    st.tuples(st.just("only"), st.just(0), st.sampled_from([b"\xef\xbb\xbf", b"", b"\x00"])),
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
    if kind == "crash":
        return data[:i] + arg + data[i:]  # type: ignore[operator]
    if kind == "only":
        return arg  # type: ignore[return-value]
    lines = data.split(b"\n")
    j = pos % len(lines)
    return b"\n".join([*lines[: j + 1], lines[j], *lines[j + 1 :]])


def check(db: Path, target: list[Path], setup: list[Path] | None = None) -> None:
    engine = open_store(db)
    if setup:
        import_paths(engine, setup)
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


FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


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


@functools.cache
def vote_exports() -> Path:
    """An export folder of the tiny study with a vote, an undo and a re-vote (made once)."""
    folder = Path(tempfile.mkdtemp(prefix="fuzz-votes-"))
    engine = open_store(folder / "src.db")
    import_paths(engine, [DATA / "studies" / "tiny-difficulty"])
    session = VotingSession(engine, "tiny", "ann")
    session.vote("left", 2500)
    session.vote("right", 2500)
    session.undo()
    session.vote("skip", 2500)
    for fmt in ("csv", "jsonl"):
        export_votes(engine, fmt=fmt, out=folder / fmt)
    engine.dispose()
    return folder


@FUZZ
@given(fmt=st.sampled_from(["csv", "jsonl"]), ops=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_vote_files(fmt: str, ops: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = (vote_exports() / fmt / f"vote_log.{fmt}").read_bytes()
        for op in ops:
            data = mutate(data, op)
        f = Path(tmp) / f"vote_log.{fmt}"
        f.write_bytes(data)
        check(Path(tmp) / "v.db", [f], setup=[DATA / "studies" / "tiny-difficulty"])


CRASH_VALUES: list[Any] = [
    "1e309",
    "inf",
    "-inf",
    "nan",
    "-1",
    str(2**63),
    "9" * 5000,
    "9999-12-31T23:00:00-05:00",
    "0001-01-01T00:00:00+05:00",
    "\ud800",
    "a\udfffb",
    "\ufeff",
    "\x00",
    "",
    "  ",
    "\x1b]0;title\x07",
    "../../x",
    float("inf"),
    float("nan"),
    2**64,
    -(2**63),
    1e308,
]
"""Cell values that once crashed the vote-file importer, and other edge values."""

NESTED = "[" * 5000 + "]" * 5000
"""Raw JSON nested deeper than the recursion limit (spliced into a JSON line as is)."""

cell = st.one_of(
    st.sampled_from(CRASH_VALUES),
    st.just(NESTED),
    st.text(max_size=20),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
)


def _vote_line(fmt: str, row: dict[str, Any], field: str, value: Any) -> bytes:
    if fmt == "jsonl":
        if value is NESTED:
            row = {**row, field: "@@"}
            return json.dumps(row).replace('"@@"', NESTED).encode() + b"\n"
        try:
            line = json.dumps({**row, field: value})  # ensure_ascii: lone surrogates escaped
        except ValueError:
            line = json.dumps({**row, field: str(value)})
        return line.encode() + b"\n"
    cells = [str(value) if k == field else str(v) for k, v in row.items()]
    text = ",".join(json.dumps(c) if any(x in c for x in ',"\n\r') else c for c in cells)
    header = ",".join(row)
    return (header + "\n" + text + "\n").encode("utf-8", "surrogatepass")


@FUZZ
@given(
    fmt=st.sampled_from(["csv", "jsonl"]),
    field=st.sampled_from(
        [
            "vote_id",
            "study",
            "annotator",
            "item_id",
            "choice",
            "left",
            "response_ms",
            "fast",
            "created_at",
            "supersedes",
            "study_fingerprint",
        ]
    ),
    value=cell,
)
@example(fmt="csv", field="response_ms", value="1e309")
@example(fmt="jsonl", field="response_ms", value=float("inf"))
@example(fmt="csv", field="response_ms", value=str(2**63))
@example(fmt="csv", field="created_at", value="9999-12-31T23:00:00-05:00")
@example(fmt="jsonl", field="annotator", value="\ud800")
@example(fmt="jsonl", field="item_id", value=NESTED)
@example(fmt="jsonl", field="annotator", value="Alice ")
def test_vote_rows_with_crash_values(fmt: str, field: str, value: Any) -> None:
    row = {
        "vote_id": "0b0c2f0e-4a8e-4d55-9a39-3f1b7a1c2d3e",
        "study": "tiny",
        "kind": "difficulty",
        "annotator": "ann",
        "item_id": "p1",
        "choice": "first",
        "left": "first",
        "response_ms": 2500,
        "fast": False,
        "created_at": "2025-01-01T10:00:00Z",
        "supersedes": "",
        "study_fingerprint": "",
    }
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / f"votes.{fmt}"
        f.write_bytes(_vote_line(fmt, row, field, value))
        check(Path(tmp) / "v.db", [f], setup=[DATA / "studies" / "tiny-difficulty"])


HARNESS = DATA / "formats" / "lm_eval"


@FUZZ
@given(which=st.integers(0, 3), ops=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_lm_eval_samples(which: int, ops: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "lm_eval"
        shutil.copytree(HARNESS, folder)
        f = sorted(folder.rglob("samples_*.jsonl"))[which]
        data = f.read_bytes()
        for op in ops:
            data = mutate(data, op)
        f.write_bytes(data)
        check(Path(tmp) / "v.db", [folder])
