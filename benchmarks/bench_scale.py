"""Scale benchmark (issue 13): import, export, monitor, report and ratings at 10k-1M votes.

Run: .venv/bin/python benchmarks/bench_scale.py [--sizes 10000,100000,1000000]
     [--battles 10000,100000,1000000,10000000] [--repeat 3] [--skip-votes] [--skip-rate]
     [--skip-monitor] [--skip-report]

Studies are built once per size in a temporary folder: an arena study (20 models,
one battle per 20 votes, 100 votes per annotator) and its ``vote_log.csv`` in the export
format, with 3% changes of mind and 1% undos (rows that supersede an earlier vote),
timestamps with microseconds and the study's fingerprint on every row. Steps:

* ``import``: ``import_paths`` of the ``vote_log.csv`` into a fresh database that holds
  the study (the study import is not timed);
* ``export``: ``export_votes(fmt="csv")`` of a database holding every vote;
* ``m-elo`` / ``am-elo``: :func:`ranking.pairwise.m_elo` / :func:`~ranking.pairwise.am_elo`
  on simulated battles (``simulate_arena``: 200 models, one annotator per 1,000
  battles), and the peers on the same arrays where installed: choix
  ``ilsr_pairwise_dense`` with the aggregation into its dense win matrix included, and
  evalica ``bradley_terry`` (its Rust solver, given lists).
* ``monitor`` / ``report`` at each of ``--sizes``: ``bench_monitor.py`` (cold open and
  the refresh after one new vote) and ``bench_report.py --cli`` (``annotate report
  --no-plots`` and ``--json``), run by this script with the same ``--repeat`` and
  ``--code`` (see :func:`monitor_and_report`).

Every step runs in a fresh subprocess; its time is wall time of the call only (rating
functions after a warm-up call on 20,000 battles, so imports are not counted), its peak
memory the subprocess's peak RSS (the interpreter, the libraries and the input arrays
included; ``VmHWM`` from ``/proc``, else ``ru_maxrss``). Repeats run interleaved (all
methods once, then again) and the table shows medians; ratios are a peer's median time
over ours (above 1: ours is faster). The load average is printed before every block,
since the machine is shared. ``--code DIR`` runs the steps with another checkout
(before/after), the database the exports read included (built by that checkout: an older
one cannot open a database of a newer schema).
Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
N_MODELS_STUDY = 20
N_MODELS_RATE = 200
HEADER = (
    "vote_id,study,kind,annotator,item_id,choice,left,response_ms,fast,created_at,"
    "supersedes,study_fingerprint\n"
)


def build_study(folder: Path, n_votes: int, seed: int = 0) -> Path:
    """Write ``folder/study`` and ``folder/vote_log.csv``; returns the vote file."""
    import numpy as np

    from annotate.services.studies import parse_study

    rng = np.random.default_rng(seed)
    n_items = max(50, n_votes // 20)
    n_ann = max(5, n_votes // 100)
    study = folder / "study"
    study.mkdir(parents=True, exist_ok=True)
    (study / "study.toml").write_text('name = "scale"\nkind = "arena"\n', encoding="utf-8")
    a = rng.integers(0, N_MODELS_STUDY, n_items)
    b = (a + rng.integers(1, N_MODELS_STUDY, n_items)) % N_MODELS_STUDY
    with (study / "battles.csv").open("w", encoding="utf-8") as fh:
        fh.write("battle_id,prompt_id,model_a,model_b\n")
        fh.writelines(f"b{i:07d},,model-{a[i]:02d},model-{b[i]:02d}\n" for i in range(n_items))
    fp = parse_study(study).fingerprint()
    n_chain = n_votes * 4 // 100
    n_base = n_votes - n_chain
    # each annotator votes on distinct items
    per = -(-n_base // n_ann)
    ann = np.repeat(np.arange(n_ann), per)[:n_base]
    offset = rng.integers(0, n_items, n_ann)
    item = offset[ann] + np.arange(n_base) - np.repeat(np.arange(n_ann) * per, per)[:n_base]
    item %= n_items
    choices = np.array(["model_a", "model_b", "tie", "both_bad"])
    choice = choices[rng.choice(4, n_base, p=[0.45, 0.42, 0.09, 0.04])]
    left = np.where(rng.random(n_base) < 0.5, "model_a", "model_b")
    ms = rng.lognormal(9.5, 0.6, n_base).astype(np.int64)
    fast = rng.random(n_base) < 0.02
    hi, lo = rng.integers(0, 2**63, (2, n_votes), dtype=np.uint64)
    ids = [
        str(uuid.UUID(int=int(x) << 64 | int(y), version=4)) for x, y in zip(hi, lo, strict=True)
    ]
    rows: list[str] = []
    t0 = 1767225600  # 2026-01-01 UTC

    def stamp(k: int) -> str:
        sec, us = divmod(k * 1_234_567 % 10**6 + k * 10**6 // 3, 10**6)
        t = time.gmtime(t0 + sec)
        return time.strftime("%Y-%m-%dT%H:%M:%S", t) + (f".{us:06d}Z" if us else "Z")

    for i in range(n_base):
        rows.append(
            f"{ids[i]},scale,arena,ann{ann[i]:05d},b{item[i]:07d},{choice[i]},{left[i]},"
            f"{ms[i]},{fast[i]},{stamp(i)},,{fp}\n"
        )
    target = rng.choice(n_base, n_chain, replace=False)
    for j, t in enumerate(target):
        i = n_base + j
        new = "retract" if j % 4 == 0 else choices[(list(choices).index(choice[t]) + 1) % 4]
        rows.append(
            f"{ids[i]},scale,arena,ann{ann[t]:05d},b{item[t]:07d},{new},{left[t]},"
            f"{ms[t]},False,{stamp(i)},{ids[t]},{fp}\n"
        )
    path = folder / "vote_log.csv"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(HEADER)
        fh.writelines(rows)
    return path


def build_battles(path: Path, n: int, seed: int = 0) -> None:
    """Simulated battles (a, b, annotator, outcome) saved as ``.npz``.

    :func:`ranking.simulation.simulate_arena` (Davidson ties, ratings spread like the
    2023 Chatbot Arena): 200 models, one annotator per 1,000 battles.
    """
    import numpy as np

    from ranking.simulation import simulate_arena

    n_ann = max(10, n // 1000)
    sim = simulate_arena(
        n_models=N_MODELS_RATE,
        n_annotators=n_ann,
        records_per_annotator=n // n_ann,
        rng=np.random.default_rng(seed),
    )
    np.savez(path, a=sim.model_a, b=sim.model_b, k=sim.annotator, w=sim.outcome)


# --------------------------------------------------------------------------- children


def child(step: str, work: Path, arg: str) -> dict[str, Any]:
    sys.path.insert(0, os.environ.get("BENCH_SCALE_CODE", str(ROOT)))
    if step == "import":
        from annotate.services.db import open_store
        from annotate.services.importing import import_paths

        db = Path(arg)
        engine = open_store(db)
        import_paths(engine, [work / "study"])
        os.sync()  # the writes of earlier steps on disk: the timed step pays for its own
        t0, c0 = time.perf_counter(), time.process_time()
        report = import_paths(engine, [work / "vote_log.csv"])
        seconds = time.perf_counter() - t0
        note = f"{report.votes_added:,} votes, {time.process_time() - c0:.2f} s CPU"
    elif step == "export":
        from annotate.services.db import open_store
        from annotate.services.exporting import export_votes

        engine = open_store(work / "base.db")
        os.sync()
        t0, c0 = time.perf_counter(), time.process_time()
        res = export_votes(engine, fmt="csv", out=Path(arg))
        seconds = time.perf_counter() - t0
        note = f"{res.log_rows:,} log rows, {time.process_time() - c0:.2f} s CPU"
    else:
        import numpy as np

        d = np.load(arg)
        a, b, k, w = d["a"], d["b"], d["k"], d["w"]
        note = ""

        def fit(a: Any, b: Any, k: Any, w: Any) -> str:
            if step == "m-elo":
                from ranking.pairwise import m_elo

                m_elo(a, b, w)
                return ""
            if step == "am-elo":
                from ranking.pairwise import am_elo

                return f"{am_elo(a, b, k, w).iterations} iterations"
            if step == "choix":
                import choix

                n = int(max(a.max(), b.max())) + 1
                win = np.where(w == 1.0, a, b)
                lose = np.where(w == 1.0, b, a)
                wt = np.where(w == 0.5, 0.5, 1.0)
                mat = np.bincount(win * n + lose, wt, n * n).reshape(n, n)
                tie = w == 0.5
                mat += np.bincount(b[tie] * n + a[tie], None, n * n).reshape(n, n) * 0.5
                choix.ilsr_pairwise_dense(mat)
                return "aggregation into the dense matrix included"
            if step == "evalica":
                import evalica

                names = np.array(
                    [evalica.Winner.Y, evalica.Winner.Draw, evalica.Winner.X], dtype=object
                )
                evalica.bradley_terry(a.tolist(), b.tolist(), names[(w * 2).astype(int)].tolist())
                return "list conversion included"
            raise SystemExit(f"unknown step {step}")

        small = min(len(a), 20_000)
        with contextlib.suppress(Exception):  # imports and first-call setup only
            fit(a[:small], b[:small], k[:small], w[:small])
        t0 = time.perf_counter()
        note = fit(a, b, k, w)
        seconds = time.perf_counter() - t0
    return {"seconds": seconds, "peak_mib": peak_rss_mib(), "note": note}


def peak_rss_mib() -> float:
    """This process's peak RSS: ``VmHWM`` (``ru_maxrss`` keeps the parent's peak across
    ``fork`` and ``exec`` on Linux, so it would report the driver's memory)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(step: str, work: Path, arg: str) -> dict[str, Any]:
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-P", __file__, "--child", step, str(work), arg],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


def median_row(name: str, size: int, runs: list[dict[str, Any]], ref: float | None) -> str:
    ok = [r for r in runs if "error" in r or "seconds" in r]
    errors = [r["error"] for r in ok if "error" in r]
    if errors:
        return f"| {name} | {size:,} | failed: {errors[0][:80]} | | | |"
    t = statistics.median(r["seconds"] for r in runs)
    mem = statistics.median(r["peak_mib"] for r in runs)
    ratio = "" if ref is None else f"{t / ref:.2f}x"
    spread = ", ".join(f"{r['seconds']:.2f}" for r in runs)
    return f"| {name} | {size:,} | {t:.3f} ({spread}) | {mem:,.0f} | {ratio} | {runs[-1]['note']} |"


def installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--battles", default="10000,100000,1000000,10000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-votes", action="store_true")
    parser.add_argument("--skip-rate", action="store_true")
    parser.add_argument(
        "--code",
        help="source tree whose annotate and ranking the steps import (default: this one), "
        "for a before/after run against an older checkout",
    )
    parser.add_argument("--import-max", type=int, help="skip the import step above this size")
    parser.add_argument(
        "--skip-monitor", action="store_true", help="leave out the monitor's cold open and refresh"
    )
    parser.add_argument("--skip-report", action="store_true", help="leave out annotate report")
    parser.add_argument("--child", nargs=3, metavar=("STEP", "WORK", "ARG"))
    args = parser.parse_args()
    if args.code:
        os.environ["BENCH_SCALE_CODE"] = str(Path(args.code).resolve())
    if args.child:
        step, work, arg = args.child
        print(json.dumps(child(step, Path(work), arg)))
        return
    head = "| step | size | median s (runs) | peak RSS MiB | ratio to ours | note |"
    rule = "|---|---|---|---|---|---|"
    code = os.environ.get("BENCH_SCALE_CODE", str(ROOT))
    print(f"python {sys.version.split()[0]}, code from {code}, {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = Path(tmp)
        if not args.skip_votes:
            print("\n## Votes: import and export (vote_log.csv)\n")
            for size in [int(x) for x in args.sizes.split(",") if x]:
                work = root / f"v{size}"
                work.mkdir()
                build_study(work, size)
                # the database every export reads, built by the code that exports it (an
                # older checkout cannot open a database of a newer schema)
                run_child("import", work, str(work / "base.db"))
                print(f"{size:,} votes built; {load()}", flush=True)
                print(head)
                print(rule)
                imp: list[dict[str, Any]] = []
                exp: list[dict[str, Any]] = []
                for r in range(args.repeat):
                    if args.import_max is None or size <= args.import_max:
                        imp.append(run_child("import", work, str(work / f"imp{r}.db")))
                    exp.append(run_child("export", work, str(work / f"out{r}")))
                    for p in work.glob(f"imp{r}.db*"):
                        p.unlink()
                    shutil.rmtree(work / f"out{r}", ignore_errors=True)
                if imp:
                    print(median_row("import", size, imp, None))
                else:
                    print(f"| import | {size:,} | skipped (--import-max) | | | |")
                print(median_row("export csv", size, exp, None), flush=True)
                shutil.rmtree(work)
        if not args.skip_rate:
            print("\n## Ratings on simulated battles (200 models)\n")
            peers = [p for p in ("choix", "evalica") if installed(p)]
            missing = [p for p in ("choix", "evalica") if not installed(p)]
            if missing:
                print(f"not installed (skipped): {', '.join(missing)}")
            for n in [int(x) for x in args.battles.split(",") if x]:
                data = root / f"b{n}.npz"
                build_battles(data, n)
                print(f"\n{n:,} battles; {load()}\n", flush=True)
                print(head)
                print(rule)
                steps = ["m-elo", "am-elo", *peers]
                runs: dict[str, list[dict[str, Any]]] = {s: [] for s in steps}
                for _ in range(args.repeat):
                    for s in steps:
                        runs[s].append(run_child(s, root, str(data)))
                ok = [r["seconds"] for r in runs["m-elo"] if "seconds" in r]
                ref = statistics.median(ok) if ok else None
                for s in steps:
                    print(median_row(s, n, runs[s], None if s in ("m-elo", "am-elo") else ref))
                print(f"({load()})", flush=True)
                data.unlink()
        if not (args.skip_monitor and args.skip_report):
            monitor_and_report(
                [int(x) for x in args.sizes.split(",") if x],
                args,
                root,
                skip_monitor=args.skip_monitor,
            )
    print(f"\ndone; {load()}")


def monitor_and_report(
    sizes: list[int], args: argparse.Namespace, root: Path, *, skip_monitor: bool
) -> None:
    """The monitor and the report at each size, by their own benchmarks (same code tree).

    ``bench_monitor.py``: an arena of ``size`` votes (300 annotators, 20 models), a cold
    open and a refresh after one new vote, each in a fresh process; ``bench_report.py
    --cli``: ``annotate report --no-plots`` (and ``--json``) as a user runs it, on a
    difficulty study of ``size / 1,000`` annotators who each judge the same 1,000 pairs.
    Their tables are printed as they come.
    """
    here = Path(__file__).resolve().parent
    code = ["--code", os.environ["BENCH_SCALE_CODE"]] if "BENCH_SCALE_CODE" in os.environ else []
    for size in sizes:
        runs: list[list[str]] = []
        if not skip_monitor:
            runs.append(
                [
                    str(here / "bench_monitor.py"),
                    "--votes",
                    str(size),
                    "--repeat",
                    str(args.repeat),
                    "--cases",
                    "first,cold,live",
                    *code,
                ]
            )
        if not args.skip_report:
            annotators = max(size // 1000, 2)
            runs.append(
                [
                    str(here / "bench_report.py"),
                    "--annotators",
                    str(annotators),
                    "--pairs",
                    "1000",
                    "--keep",
                    str(root / f"report{size}"),
                    "--cli",
                    str(args.repeat),
                    *code,
                ]
            )
        for cmd in runs:
            title = (
                "monitor (bench_monitor.py)"
                if "bench_monitor" in cmd[0]
                else "report (bench_report.py --cli)"
            )
            print(f"\n## {title}, {size:,} votes; {load()}\n", flush=True)
            out = subprocess.run([sys.executable, *cmd], capture_output=True, text=True)
            print(out.stdout.rstrip())
            if out.returncode:
                print(f"failed ({out.returncode}): {out.stderr.strip().splitlines()[-1:]}")


if __name__ == "__main__":
    main()
