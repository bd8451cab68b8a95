"""``annotate import``: study folders, vote exports and third-party formats.

Everything named on one command line is parsed and checked first, then written
in ONE transaction: either every file loads whole or the database is unchanged.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text
from sqlmodel import Session

from annotate.errors import AnnotateError, InputFileError
from annotate.services import formats
from annotate.services.studies import DEFAULT_SETTINGS, StudySpec, is_study_dir, parse_study
from annotate.services.votes_io import VoteRecord, is_vote_file, parse_vote_file
from annotate.store import repo

IMPORT_FORMATS = ("auto", "study", "votes", "chatbot-arena", "llmfao", "lm-eval")


@dataclass
class ImportReport:
    """What an import added, per study."""

    studies_created: list[str] = field(default_factory=list)
    studies_unchanged: list[str] = field(default_factory=list)
    items_added: int = 0
    votes_added: int = 0
    votes_skipped: int = 0
    """Votes already in the database (same uuid)."""
    scores_added: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "studies_created": self.studies_created,
            "studies_unchanged": self.studies_unchanged,
            "items_added": self.items_added,
            "votes_added": self.votes_added,
            "votes_skipped": self.votes_skipped,
            "scores_added": self.scores_added,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class _Job:
    kind: str
    payload: Any
    path: Path


def _study_name_from(path: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", path.stem).strip("-")
    return name or "imported"


def classify(
    path: Path,
    *,
    fmt: str = "auto",
    study: str | None = None,
    model: str | None = None,
    metric: str | None = None,
    filter_name: str | None = None,
) -> list[_Job]:
    """Parse one command-line path into import jobs (no database access)."""
    if not path.exists():
        raise InputFileError(path, "no such file or folder")
    if fmt == "lm-eval" or (
        fmt == "auto" and (path.name.startswith("samples_") and path.suffix == ".jsonl")
    ):
        samples = formats.parse_harness(path, model=model, metric=metric, filter_name=filter_name)
        return [_Job("harness", samples, path)]
    if path.is_dir():
        if fmt in ("auto", "study") and is_study_dir(path):
            return [_Job("study", parse_study(path), path)]
        if fmt == "auto":
            jobs: list[_Job] = []
            studies_dir = path / "studies"
            if studies_dir.is_dir():
                for d in sorted(studies_dir.iterdir()):
                    if is_study_dir(d):
                        jobs.append(_Job("study", parse_study(d), d))
            for stem in ("vote_log", "votes"):
                found = [
                    p
                    for p in (path / f"{stem}.{e}" for e in ("csv", "jsonl", "parquet"))
                    if p.exists()
                ]
                if found:
                    jobs.append(_Job("votes", parse_vote_file(found[0]), found[0]))
                    break
            if jobs:
                return jobs
            if any(path.rglob("samples_*.jsonl")):
                samples = formats.parse_harness(
                    path, model=model, metric=metric, filter_name=filter_name
                )
                return [_Job("harness", samples, path)]
        raise InputFileError(
            path,
            "not a study folder, an export folder or an lm-evaluation-harness output folder",
            expected="a folder with study.toml, an export (votes.*), or samples_*.jsonl files",
        )
    if fmt == "study":
        raise InputFileError(path, "is a file", expected="a study folder with study.toml")
    if fmt == "votes":
        return [_Job("votes", parse_vote_file(path), path)]
    name = study or _study_name_from(path)
    if fmt == "chatbot-arena":
        return [_Job("arena", (name, formats.parse_chatbot_arena(path, name)), path)]
    if fmt == "llmfao":
        return [_Job("arena", (name, formats.parse_llmfao(path, name)), path)]
    if path.suffix.lower() == ".parquet":
        return [_Job("votes", parse_vote_file(path), path)]
    cols = formats.sniff_columns(path)
    if is_vote_file(cols):
        return [_Job("votes", parse_vote_file(path), path)]
    if {"model_a", "model_b", "winner", "judge"} <= cols:
        return [_Job("arena", (name, formats.parse_chatbot_arena(path, name)), path)]
    if {"id", "model_x", "model_y", "worker", "winner", "left", "right"} <= cols:
        return [_Job("arena", (name, formats.parse_llmfao(path, name)), path)]
    raise InputFileError(
        path,
        f"unrecognised columns ({', '.join(sorted(cols)) or 'none'})",
        expected="a vote export (vote_id, study, annotator, item_id, choice), Chatbot Arena "
        "battles (model_a, model_b, winner, judge) or LLMFAO votes "
        "(id, prompt, model_x, model_y, worker, winner, left, right)",
    )


def import_paths(
    engine: Engine,
    paths: list[Path],
    *,
    fmt: str = "auto",
    study: str | None = None,
    model: str | None = None,
    metric: str | None = None,
    filter_name: str | None = None,
) -> ImportReport:
    """Parse every path, then write everything in one transaction."""
    jobs: list[_Job] = []
    for p in paths:
        jobs.extend(
            classify(p, fmt=fmt, study=study, model=model, metric=metric, filter_name=filter_name)
        )
    report = ImportReport()
    touched: set[str] = set()
    with Session(engine) as s, s.begin():
        for job in jobs:
            if job.kind == "study":
                _apply_study(s, job.payload, job.path, report)
            elif job.kind == "votes":
                _apply_votes(s, job.payload, report)
            elif job.kind == "arena":
                name, records = job.payload
                _apply_arena(s, name, records, report)
                touched.add(name)
            elif job.kind == "harness":
                touched.add(_apply_harness(s, study, job.payload, job.path, report))
        for name in touched:
            _refresh_fingerprint(s, name)
    return report


def _refresh_fingerprint(s: Session, name: str) -> None:
    from annotate.services.exporting import stored_spec

    st = repo.get_study(s, name)
    assert st is not None
    repo.set_fingerprint(s, st.id, stored_spec(s, st).fingerprint())


def _apply_study(s: Session, spec: StudySpec, path: Path, report: ImportReport) -> None:
    fp = spec.fingerprint()
    existing = repo.get_study(s, spec.name)
    if existing is not None:
        if existing.fingerprint == fp:
            report.studies_unchanged.append(spec.name)
            return
        raise InputFileError(
            path / "study.toml",
            f"a different study named {spec.name!r} is already in the database",
            field="name",
            expected="a new name, or the same items as the stored study",
        )
    sid = repo.insert_study(
        s,
        name=spec.name,
        kind=spec.kind,
        title=spec.title,
        description=spec.description,
        settings=spec.settings,
        fingerprint=fp,
    )
    if spec.kind == "difficulty":
        qids = repo.insert_questions(
            s, sid, [(q.key, q.subject, q.text, q.choices) for q in spec.questions]
        )
        for pos, p in enumerate(spec.pairs):
            item = repo.insert_item(s, sid, p.key, pos)
            repo.insert_pair(s, item, qids[p.first], qids[p.second])
        report.scores_added += repo.insert_scores(s, ((qids[q], m, v) for q, m, v in spec.scores))
        repo.insert_models(s, sid, spec.models)
        report.items_added += len(spec.pairs)
    else:
        pids = {p.key: repo.insert_prompt(s, sid, p.key, p.text, p.category) for p in spec.prompts}
        for r in spec.responses:
            repo.insert_response(s, pids[r.prompt], r.model, r.text)
        for pos, b in enumerate(spec.battles):
            item = repo.insert_item(s, sid, b.key, pos)
            repo.insert_battle(s, item, pids[b.prompt] if b.prompt else None, b.model_a, b.model_b)
        report.items_added += len(spec.battles)
    s.flush()
    report.studies_created.append(spec.name)


class _VoteWriter:
    """Inserts imported votes, keeping chains consistent and skipping known uuids."""

    def __init__(self, s: Session, study_id: int) -> None:
        self.s = s
        self.study_id = study_id
        rows = s.execute(
            text("SELECT uuid, annotator_id, item_id, supersedes FROM vote WHERE study_id = :s"),
            {"s": study_id},
        ).all()
        self.known: set[str] = set()
        self.superseded: dict[str, str] = {}
        self.chains: dict[tuple[int, int], str] = {}
        for u, a, i, sup in rows:
            self.known.add(u)
            if sup:
                self.superseded[sup] = u
            self.chains.setdefault((a, i), u)
        self.annotators: dict[str, int] = {}
        self.batch: list[tuple[Any, ...]] = []

    def annotator(self, name: str) -> int:
        if name not in self.annotators:
            aid = repo.annotator_id(self.s, name)
            assert aid is not None
            self.annotators[name] = aid
        return self.annotators[name]

    def add(
        self,
        *,
        vote_uuid: str,
        annotator: str,
        item_id: int,
        choice: str,
        swapped: bool,
        response_ms: int | None,
        fast: bool,
        created_at: datetime | None,
        supersedes: str | None,
        where: tuple[Path, int],
    ) -> bool:
        if vote_uuid in self.known:
            return False
        aid = self.annotator(annotator)
        path, line = where
        if supersedes is not None and supersedes in self.superseded:
            raise InputFileError(
                path,
                f"vote {vote_uuid} replaces vote {supersedes}, which vote "
                f"{self.superseded[supersedes]} already replaces",
                line=line,
                field="supersedes",
                expected="one history per annotator and item (this file conflicts with the "
                "database; the database was left unchanged)",
            )
        starts_chain = supersedes is None or supersedes not in self.known
        if starts_chain and (aid, item_id) in self.chains:
            raise InputFileError(
                path,
                f"annotator {annotator!r} already has a vote on this item in the database "
                f"(vote {self.chains[(aid, item_id)]}); vote {vote_uuid} would start a second one",
                line=line,
                field="vote_id",
                expected="votes not yet in the database, or the same vote ids (the database was "
                "left unchanged)",
            )
        self.known.add(vote_uuid)
        self.chains.setdefault((aid, item_id), vote_uuid)
        if supersedes is not None:
            self.superseded[supersedes] = vote_uuid
        created = (created_at or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
        self.batch.append(
            (
                vote_uuid,
                self.study_id,
                aid,
                item_id,
                choice,
                swapped,
                response_ms,
                fast,
                created.isoformat(sep=" "),
                supersedes,
            )
        )
        return True

    def flush(self) -> None:
        if not self.batch:
            return
        try:
            repo.bulk_insert_votes(self.s, self.batch)
        except sqlite3.IntegrityError as err:
            raise AnnotateError(
                f"the votes conflict with the database: {err}", title="Cannot import"
            ) from err
        self.batch.clear()


def _apply_votes(s: Session, records: list[VoteRecord], report: ImportReport) -> None:
    by_study: dict[str, list[VoteRecord]] = defaultdict(list)
    for r in records:
        by_study[r.study].append(r)
    for name, recs in by_study.items():
        st = repo.get_study(s, name)
        if st is None:
            r0 = recs[0]
            raise InputFileError(
                r0.path,
                f"unknown study {name!r}",
                line=r0.line,
                field="study",
                expected="a study in the database (import its study folder first, or import "
                "the whole export folder)",
            )
        items = repo.item_ids(s, st.id)
        allowed = (repo.DIFFICULTY_CHOICES if st.kind == "difficulty" else repo.ARENA_CHOICES) + (
            repo.RETRACT,
        )
        writer = _VoteWriter(s, st.id)
        in_file = {r.uuid for r in recs}
        ordered = _parents_first(recs, in_file)
        for r in ordered:
            if r.item_key not in items:
                raise InputFileError(
                    r.path,
                    f"unknown item {r.item_key!r} in study {name!r}",
                    line=r.line,
                    field="item_id",
                    expected="a pair or battle id of that study",
                )
            if r.choice not in allowed:
                raise InputFileError(
                    r.path,
                    f"{r.choice!r} in a {st.kind} study",
                    line=r.line,
                    field="choice",
                    expected=", ".join(allowed),
                )
            swapped = r.left in ("second", "model_b")
            added = writer.add(
                vote_uuid=r.uuid,
                annotator=r.annotator,
                item_id=items[r.item_key],
                choice=r.choice,
                swapped=swapped,
                response_ms=r.response_ms,
                fast=r.fast,
                created_at=r.created_at,
                supersedes=r.supersedes,
                where=(r.path, r.line),
            )
            if added:
                report.votes_added += 1
            else:
                report.votes_skipped += 1
        writer.flush()


def _parents_first(recs: list[VoteRecord], in_file: set[str]) -> list[VoteRecord]:
    by_uuid = {r.uuid: r for r in recs}
    done: set[str] = set()
    out: list[VoteRecord] = []
    for r in recs:
        stack = [r]
        chain: list[VoteRecord] = []
        while stack:
            cur = stack.pop()
            if cur.uuid in done:
                continue
            chain.append(cur)
            if cur.supersedes in in_file and cur.supersedes not in done:
                parent = by_uuid[cur.supersedes]  # type: ignore[index]
                if parent in chain:
                    raise InputFileError(
                        cur.path,
                        "votes supersede each other in a cycle",
                        line=cur.line,
                        field="supersedes",
                    )
                stack.append(parent)
        for c in reversed(chain):
            if c.uuid not in done:
                done.add(c.uuid)
                out.append(c)
    return out


def _apply_arena(
    s: Session, name: str, records: formats.ArenaRecords, report: ImportReport
) -> None:
    st = repo.get_study(s, name)
    if st is None:
        sid = repo.insert_study(
            s,
            name=name,
            kind="arena",
            title=f"Imported from {records.path.name}",
            description=f"{records.layout} records",
            settings=dict(DEFAULT_SETTINGS["arena"]),
            fingerprint="",
        )
        report.studies_created.append(name)
    else:
        if st.kind != "arena":
            raise InputFileError(
                records.path,
                f"study {name!r} is a {st.kind} study",
                expected="an arena study name (pass --study NAME)",
            )
        sid = st.id
    existing = repo.battle_models(s, sid)
    items = repo.item_ids(s, sid)
    pos = len(items)
    for key, (a, b, line) in records.battles.items():
        if key in existing:
            _, ea, eb = existing[key]
            if (ea, eb) != (a, b):
                raise InputFileError(
                    records.path,
                    f"battle {key!r} is {a} vs {b} here but {ea} vs {eb} in study {name!r}",
                    line=line,
                    expected="the same models as the stored battle",
                )
            continue
        item = repo.insert_item(s, sid, key, pos)
        pos += 1
        repo.insert_battle(s, item, None, a, b)
        items[key] = item
        report.items_added += 1
    writer = _VoteWriter(s, sid)
    for v in records.votes:
        added = writer.add(
            vote_uuid=v.uuid,
            annotator=v.annotator,
            item_id=items[v.item_key],
            choice=v.choice,
            swapped=False,
            response_ms=None,
            fast=False,
            created_at=v.created_at,
            supersedes=None,
            where=(records.path, v.line),
        )
        if added:
            report.votes_added += 1
        else:
            report.votes_skipped += 1
    writer.flush()


def _apply_harness(
    s: Session,
    study: str | None,
    samples: list[formats.HarnessSample],
    path: Path,
    report: ImportReport,
) -> str:
    tasks = sorted({x.task for x in samples})
    name = study or (tasks[0] if len(tasks) == 1 else "lm-eval")
    st = repo.get_study(s, name)
    if st is None:
        sid = repo.insert_study(
            s,
            name=name,
            kind="difficulty",
            title=f"lm-evaluation-harness: {', '.join(tasks)}",
            description="response matrix imported from --log_samples output",
            settings=dict(DEFAULT_SETTINGS["difficulty"]),
            fingerprint="",
        )
        report.studies_created.append(name)
    else:
        if st.kind != "difficulty":
            raise InputFileError(
                path,
                f"study {name!r} is an arena study",
                expected="a difficulty study name (pass --study NAME)",
            )
        sid = st.id
    qids = repo.question_ids(s, sid)
    new_q: dict[str, formats.HarnessSample] = {}
    for x in samples:
        key = f"{x.task}/{x.doc_id}"
        if key not in qids and key not in new_q:
            new_q[key] = x
    qids.update(
        repo.insert_questions(s, sid, [(k, x.task, x.text, x.choices) for k, x in new_q.items()])
    )
    stored = {
        (q, m): v
        for q, m, v in s.execute(
            text("""SELECT r.question_id, r.model, r.score FROM responsescore r
                    JOIN question q ON q.id = r.question_id WHERE q.study_id = :s"""),
            {"s": sid},
        ).all()
    }
    rows = []
    for x in samples:
        qid = qids[f"{x.task}/{x.doc_id}"]
        prev = stored.get((qid, x.model))
        if prev is not None:
            if abs(prev - x.score) > 1e-12:
                raise InputFileError(
                    x.path,
                    f"model {x.model!r} already has score {prev} on {x.task}/{x.doc_id}",
                    line=x.line,
                    field="doc_id",
                    expected="the same score as stored, or a different --model name",
                )
            continue
        rows.append((qid, x.model, x.score))
    report.scores_added += repo.insert_scores(s, rows)
    models = sorted({x.model for x in samples})
    report.notes.append(
        f"{len(samples)} samples of {len(models)} model(s) ({', '.join(models)}) "
        f"on {len(tasks)} task(s) into study {name!r}"
    )
    return name
