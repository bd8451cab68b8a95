"""``annotate export``: votes, vote history, items and the studies themselves."""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.choices import LEFT_CHOICES
from annotate.errors import StudyNotFoundError
from annotate.services.paths import inside, output_folder
from annotate.services.studies import StudySpec, spec_from_contents
from annotate.services.votes_io import EXPORT_COLUMNS, iso_stamp, vote_dicts, write_table
from annotate.store import repo

ITEM_COLUMNS = [
    "study",
    "kind",
    "item_id",
    "position",
    "first",
    "second",
    "subject",
    "prompt_id",
    "model_a",
    "model_b",
]


@dataclass(frozen=True)
class ExportResult:
    folder: Path
    files: list[Path]
    votes: int
    log_rows: int


def default_exports_dir() -> Path:
    """``exports/`` in the current directory."""
    return Path.cwd() / "exports"


def export_votes(
    engine: Engine, *, fmt: str, out: Path | None = None, study: str | None = None
) -> ExportResult:
    """Write ``votes.<fmt>``, ``vote_log.<fmt>``, ``items.<fmt>`` and ``studies/``."""
    folder = output_folder(out or default_exports_dir())
    with Session(engine) as s:
        if study is not None:
            st = repo.get_study(s, study)
            if st is None:
                raise StudyNotFoundError(study, repo.study_names(s))
            studies = [st]
        else:
            studies = [st for n in repo.study_names(s) if (st := repo.get_study(s, n))]
        # A study name is data: a name like ``../x`` is refused before anything is written.
        study_folders = [inside(folder, "studies", st.name) for st in studies]
        items: list[dict[str, object]] = []
        fps: list[str] = []
        for st in studies:
            fps.append(study_fingerprint(s, st))
            items += _items(s, st)
        votes_path, log_path = inside(folder, "votes"), inside(folder, "vote_log")
        if fmt == "csv" and all(repo.vote_export_plain(s, st.id) for st in studies):
            try:
                votes_file, log_file, n_current, n_log = _write_csv_votes_columnar(
                    s, studies, fps, votes_path, log_path
                )
            except _NotColumnarError:  # a stored timestamp iso_stamp refuses: its error
                votes_file, log_file, n_current, n_log = _write_csv_votes(
                    s, studies, fps, votes_path, log_path
                )
        else:
            votes_file, n_current = _write_votes(s, studies, fps, votes_path, fmt, True)
            log_file, n_log = _write_votes(s, studies, fps, log_path, fmt, False)
        files = [
            votes_file,
            log_file,
            write_table(items, ITEM_COLUMNS, inside(folder, "items"), fmt),
        ]
        for st, target in zip(studies, study_folders, strict=True):
            files += write_study_folder(s, st, target)
        files.append(_write_notes(s, studies, folder, fmt))  # comments and flags (issue 12)
        files += _write_quality(s, studies, folder, fmt)  # re-tests, questionnaire (issue 16)
    return ExportResult(folder, files, n_current, n_log)


class _NotColumnarError(Exception):
    """A value needs what only the SQL line path does (CSV quoting, a timestamp in another
    form than the store's): that path writes the files instead."""


_COMMAS = 12
"""Commas the query of :func:`~annotate.store.repo.vote_export_csv_parts` writes per line
(with a tail of two commas, around the fingerprint; ``repr`` of a probability has none): a
batch with exactly that many per line has none in a value."""


def _columnar_lines(batch: list[str], tail: str) -> tuple[Any, Any, Any]:
    """A batch of :func:`~annotate.store.repo.vote_export_csv_parts` (one text per vote) as
    the CSV lines :func:`_write_csv_votes` writes (a ``pyarrow`` string array over one
    buffer of UTF-8 bytes), with each vote's id and whether it is an undo (choice
    ``retract``); :class:`_NotColumnarError` unless every line needs no CSV quoting (no
    quote, no line feed but the last, no comma in a value), has a 36-byte vote id and a
    timestamp in the store's form (``YYYY-MM-DD HH:MM:SS[.ffffff]``, a year other than
    0000), the checks of ``repo._CANONICAL_STAMP``.

    The texts are joined and encoded once (no Python object per line after that); the
    counts of quotes, NULs, commas and line feeds are byte searches of the whole batch,
    and one pass finds where each line's commas and its line feed are. The timestamp
    becomes export form in place (``T`` for the space; the query wrote the ``Z``); a zero
    fraction (``.000000``) is cut out of its line in Python (rare: only the app's own rows
    at a whole second have one).
    """
    import numpy as np
    import pyarrow as pa

    n = len(batch)
    data = "".join(batch).encode("utf-8")
    if (
        tail.count(",") != 2
        or not tail.endswith("\n")
        or data.count(b"\n") != n
        or data.count(b",") != _COMMAS * n
        or b'"' in data
        or b"\x00" in data  # a NUL (hand-written): SQL text functions may cut it
    ):
        raise _NotColumnarError
    size = len(data)
    buf = np.empty(size + 40, dtype=np.uint8)  # room to read past the last line
    buf[:size] = np.frombuffer(data, dtype=np.uint8)
    buf[size:] = ord(" ")
    del data
    text = buf[:size]
    # every line ends with its line feed (the tail's), so n line feeds in all means one
    # each; the commas and line feed of each line, in order: twelve commas then its end
    marks = np.flatnonzero((text == ord(",")) | (text == ord("\n"))).reshape(n, _COMMAS + 1)
    if np.any(text[marks[:, _COMMAS]] != ord("\n")):
        raise _NotColumnarError  # a line with another number of commas
    commas = marks[:, :_COMMAS]
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    offsets[1:] = marks[:, _COMMAS] + 1
    start = offsets[:-1]
    if np.any(commas[:, 0] - start != 36):
        raise _NotColumnarError
    # the stamp: after the ninth comma, up to the tenth ('Z' before it)
    at = commas[:, 8] + 1
    width = commas[:, 9] - at
    window = np.lib.stride_tricks.sliding_window_view(buf, 36)  # rows: no index matrix
    m = window[at, :27]
    digit = (m >= ord("0")) & (m <= ord("9"))
    fixed = (
        np.all(digit[:, [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]], axis=1)
        & (m[:, 4] == ord("-"))
        & (m[:, 7] == ord("-"))
        & (m[:, 10] == ord(" "))
        & (m[:, 13] == ord(":"))
        & (m[:, 16] == ord(":"))
        & np.any(m[:, :4] != ord("0"), axis=1)
    )
    whole = (width == 20) & (m[:, 19] == ord("Z"))
    fraction = (
        (width == 27)
        & (m[:, 19] == ord("."))
        & np.all(digit[:, 20:26], axis=1)
        & (m[:, 26] == ord("Z"))
    )
    if not np.all(fixed & (whole | fraction)):
        raise _NotColumnarError
    buf[at + 10] = ord("T")
    # undos: the choice (between the fifth and sixth commas) is "retract"
    choice = window[commas[:, 4] + 1, :8]
    retract = np.all(choice == np.frombuffer(b"retract,", dtype=np.uint8), axis=1)
    ids = window[start]
    uuid = pa.Array.from_buffers(
        pa.string(),
        n,
        [None, pa.py_buffer(np.arange(0, 36 * (n + 1), 36, dtype=np.int32)), pa.py_buffer(ids)],
    )
    zero = fraction & np.all(m[:, 19:26] == np.frombuffer(b".000000", dtype=np.uint8), axis=1)
    out = pa.Array.from_buffers(
        pa.string(),
        n,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(text)],
    )
    if np.any(zero):
        values = out.to_pylist()
        for i in np.flatnonzero(zero).tolist():
            line = text[offsets[i] : offsets[i + 1]].tobytes()
            k = int(at[i] - start[i]) + 19
            values[i] = (line[:k] + line[k + 7 :]).decode("utf-8")
        out = pa.array(values, pa.string())
    return out, uuid, retract


def _text_bytes(col: Any) -> Any:
    """The UTF-8 bytes of a ``pyarrow`` string array's values, one after another."""
    import numpy as np

    n = len(col)
    if not n:
        return b""
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int32)[col.offset : col.offset + n + 1]
    return np.frombuffer(col.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]


def _write_csv_votes_columnar(
    s: Session,
    studies: list[repo.StudyRow],
    fingerprints: list[str],
    votes_path: Path,
    log_path: Path,
) -> tuple[Path, Path, int, int]:
    """``votes.csv`` and ``vote_log.csv`` in one pass over the vote log: SQL concatenates
    each row's stored values (:func:`~annotate.store.repo.vote_export_csv_parts`), each
    batch is checked and its timestamps put in export form in vectorised passes
    (:func:`_columnar_lines`) and written as one block of bytes. Byte for byte what
    :func:`_write_csv_votes` writes; :class:`_NotColumnarError` (before anything is
    written, or part way) when a value needs what only that path does.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(EXPORT_COLUMNS)
    for st, fp in zip(studies, fingerprints, strict=True):
        if any(c in st.name + st.kind + (fp or "") for c in ("\n", "\r", ",", '"')):
            raise _NotColumnarError
    votes_file, log_file = votes_path.with_suffix(".csv"), log_path.with_suffix(".csv")
    superseded = pa.array(repo.superseded_vote_uuids(s), pa.string())
    n_current = n_log = 0
    with votes_file.open("wb") as votes, log_file.open("wb") as log:
        votes.write(header.getvalue().encode("utf-8"))
        log.write(header.getvalue().encode("utf-8"))
        for st, fp in zip(studies, fingerprints, strict=True):
            tail = f",{fp},\n"
            first, second = LEFT_CHOICES["difficulty" if st.kind == "difficulty" else "arena"]
            for batch, probabilities in repo.vote_export_csv_parts(
                s,
                st.id,
                study_kind=f"{st.name},{st.kind}",
                left=(first.value, second.value),
                tail=tail,
            ):
                if probabilities.count(None) != len(probabilities):  # adaptive: repr, as csv
                    batch = [
                        line if p is None else f"{line[:-1]}{p!r}\n"
                        for line, p in zip(batch, probabilities, strict=True)
                    ]
                lines, uuid, retract = _columnar_lines(batch, tail)
                del batch
                # "current" is the condition of the current_vote view
                current = pc.and_(
                    pc.invert(pc.is_in(uuid, value_set=superseded)), pa.array(~retract)
                )
                log.write(_text_bytes(lines))
                kept = lines.filter(current)
                votes.write(_text_bytes(kept))
                n_log += len(lines)
                n_current += len(kept)
    return votes_file, log_file, n_current, n_log


def _write_csv_votes(
    s: Session,
    studies: list[repo.StudyRow],
    fingerprints: list[str],
    votes_path: Path,
    log_path: Path,
) -> tuple[Path, Path, int, int]:
    """``votes.csv`` and ``vote_log.csv`` in one pass over the vote log: lines formatted
    in SQL (:func:`~annotate.store.repo.vote_export_csv_lines`), the current votes' lines
    also written to ``votes.csv``. Byte for byte what :func:`_write_votes` writes.
    """
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(EXPORT_COLUMNS)
    votes_file, log_file = votes_path.with_suffix(".csv"), log_path.with_suffix(".csv")
    n_current = n_log = 0
    with (
        votes_file.open("w", encoding="utf-8", newline="") as votes,
        log_file.open("w", encoding="utf-8", newline="") as log,
    ):
        votes.write(header.getvalue())
        log.write(header.getvalue())
        for st, fp in zip(studies, fingerprints, strict=True):
            tail = io.StringIO()
            csv.writer(tail, lineterminator="").writerow(["", fp or None, ""])
            for lines, current in repo.vote_export_csv_lines(
                s, st.id, tail=tail.getvalue(), stamp=iso_stamp
            ):
                log.writelines(lines)
                votes.writelines(itertools.compress(lines, current))
                n_log += len(lines)
                n_current += sum(current)
    return votes_file, log_file, n_current, n_log


def _write_votes(
    s: Session,
    studies: list[repo.StudyRow],
    fingerprints: list[str],
    path: Path,
    fmt: str,
    current_only: bool,
) -> tuple[Path, int]:
    """Write the votes (``current_only``) or the whole vote log of ``studies``; the file and
    its row count.

    CSV and JSON Lines are streamed from the database in batches, byte for byte what
    :func:`~annotate.services.votes_io.write_table` writes from
    :func:`~annotate.services.votes_io.vote_dicts`; Parquet is built in memory.
    """
    if fmt not in ("csv", "jsonl"):
        rows: list[dict[str, object]] = []
        for st, fp in zip(studies, fingerprints, strict=True):
            rows += vote_dicts(
                repo.vote_records(s, st.id, current_only=current_only, with_probability=True), fp
            )
        return write_table(rows, list(EXPORT_COLUMNS), path, fmt), len(rows)
    target = path.with_suffix(f".{fmt}")
    n = 0
    with target.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        if fmt == "csv":
            writer.writerow(EXPORT_COLUMNS)
        for st, fp in zip(studies, fingerprints, strict=True):
            for batch in repo.vote_export_rows(
                s,
                st.id,
                current_only=current_only,
                fingerprint=fp or None,
                stamp=iso_stamp,
                whole_ms=fmt == "csv",
            ):
                n += len(batch)
                if fmt == "csv":
                    writer.writerows(batch)
                    continue
                fh.writelines(
                    json.dumps(
                        {
                            **dict(zip(EXPORT_COLUMNS, r, strict=True)),
                            "fast": r[8] == "True",
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                    for r in batch
                )
    return target, n


def _items(s: Session, st: repo.StudyRow) -> list[dict[str, object]]:
    if st.kind == "difficulty":
        return [
            {
                "study": st.name,
                "kind": st.kind,
                "item_id": k,
                "position": pos,
                "first": a,
                "second": b,
                "subject": subj,
                "prompt_id": None,
                "model_a": None,
                "model_b": None,
            }
            for k, pos, a, b, subj in repo.pair_items(s, st.id)
        ]
    return [
        {
            "study": st.name,
            "kind": st.kind,
            "item_id": k,
            "position": pos,
            "first": None,
            "second": None,
            "subject": None,
            "prompt_id": p,
            "model_a": a,
            "model_b": b,
        }
        for k, pos, p, a, b in repo.battle_items(s, st.id)
    ]


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list | tuple):  # arrays and inline tables (the questionnaire) nest
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        inner = ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items())
        return "{ " + inner + " }"
    return json.dumps(v, ensure_ascii=False)


def stored_spec(s: Session, st: repo.StudyRow) -> StudySpec:
    """The stored study as a :class:`StudySpec` (what its files would hold)."""
    return spec_from_contents(
        st.name, st.kind, st.title, st.description, st.settings, repo.study_contents(s, st.id)
    )


def study_fingerprint(s: Session, st: repo.StudyRow) -> str:
    """The study's identity for vote files: its stored fingerprint (computed if missing)."""
    return st.fingerprint or stored_spec(s, st).fingerprint()


def write_study_folder(s: Session, st: repo.StudyRow, folder: Path) -> list[Path]:
    """Write a stored study back in its own file format; it re-imports as the same study."""
    spec = stored_spec(s, st)
    folder.mkdir(parents=True, exist_ok=True)
    settings = "\n".join(
        f"{k} = {_toml_value(v)}" for k, v in sorted(spec.settings.as_dict().items())
    )
    toml = (
        f"name = {_toml_value(spec.name)}\nkind = {_toml_value(spec.kind)}\n"
        f"title = {_toml_value(spec.title)}\ndescription = {_toml_value(spec.description)}\n\n"
        f"[settings]\n{settings}\n"
    )
    files = [folder / "study.toml"]
    files[0].write_text(toml, encoding="utf-8")

    def jsonl(name: str, recs: Sequence[Mapping[str, object]]) -> None:
        with (folder / name).open("w", encoding="utf-8") as fh:
            for rec in recs:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        files.append(folder / name)

    def csvfile(name: str, header: list[str], rows: list[list[object]]) -> None:
        with (folder / name).open("w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            w.writerows(rows)
        files.append(folder / name)

    if spec.kind == "difficulty":
        jsonl(
            "questions.jsonl",
            [
                {"id": q.key, "subject": q.subject, "text": q.text}
                | ({"choices": list(q.choices)} if q.choices else {})
                for q in spec.questions
            ],
        )
        gold = any(p.gold for p in spec.pairs)  # the gold column only where it was given
        csvfile(
            "pairs.csv",
            ["pair_id", "first", "second", *(["gold"] if gold else [])],
            [[p.key, p.first, p.second, *([p.gold or ""] if gold else [])] for p in spec.pairs],
        )
        if spec.scores:
            csvfile(
                "responses.csv",
                ["question_id", "model", "score"],
                [[q, m, repr(v)] for q, m, v in spec.scores],
            )
        if spec.models:
            cols = list(next(iter(spec.models.values())).keys())
            csvfile(
                "models.csv",
                ["model", *cols],
                [[m, *[meta.get(c, "") for c in cols]] for m, meta in spec.models.items()],
            )
        return files
    if spec.prompts:
        jsonl(
            "prompts.jsonl",
            [
                {"id": p.key, "text": p.text} | ({"category": p.category} if p.category else {})
                for p in spec.prompts
            ],
        )
        jsonl(
            "responses.jsonl",
            [{"prompt_id": r.prompt, "model": r.model, "text": r.text} for r in spec.responses],
        )
    gold = any(b.gold for b in spec.battles)
    csvfile(
        "battles.csv",
        ["battle_id", "prompt_id", "model_a", "model_b", *(["gold"] if gold else [])],
        [
            [b.key, b.prompt or "", b.model_a, b.model_b, *([b.gold or ""] if gold else [])]
            for b in spec.battles
        ],
    )
    return files


def _write_quality(s: Session, studies: list[repo.StudyRow], folder: Path, fmt: str) -> list[Path]:
    """``retests.<fmt>`` (every row of the swapped re-test chains) and ``annotators.<fmt>``
    (the questionnaire answers, ``answer`` a JSON list), for the studies that have any."""
    from annotate.services.votes_io import iso_stamp

    retests = [r for st in studies for r in repo.retest_records(s, st.id)]
    answers = [r for st in studies for r in repo.answer_records(s, st.id)]
    out: list[Path] = []
    if retests:
        cols = list(repo.RETEST_COLUMNS)
        recs = [dict(zip(cols, r, strict=True)) | {"created_at": iso_stamp(r[8])} for r in retests]
        out.append(write_table(recs, cols, inside(folder, "retests"), fmt))
    if answers:
        cols = list(repo.ANSWER_COLUMNS)
        recs = [dict(zip(cols, r, strict=True)) | {"created_at": iso_stamp(r[4])} for r in answers]
        out.append(write_table(recs, cols, inside(folder, "annotators"), fmt))
    return out


def _write_notes(s: Session, studies: list[repo.StudyRow], folder: Path, fmt: str) -> Path:
    """``item_notes.<fmt>``: the annotators' comments and flags, text exactly as stored."""
    from annotate.services.notes import NOTE_COLUMNS, note_dicts

    rows = [r for st in studies for r in repo.item_notes(s, st.id)]
    return write_table(note_dicts(rows), list(NOTE_COLUMNS), inside(folder, "item_notes"), fmt)
