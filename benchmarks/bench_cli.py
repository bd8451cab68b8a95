"""Start-up time of every command and the app's time to its first item (not a timed test).

Each command runs ``--runs`` times (default 10) in a fresh process, through both entry
points: the console script (``.venv/bin/annotate``) and ``python -m annotate``. The
table gives the median and the 90th percentile of the wall time from spawning the
process to its exit, stdout and stderr to /dev/null, and the median CPU time (user +
system) of the console-script runs, which a busy machine inflates much less. The
commands: ``--help``, each command's ``--help``, ``studies`` (and ``--json``) on a
database holding the demo and a few hundred votes, and a 4-row battle-file import into
a new database per run.

The app's time to first item: ``annotate --annotator NAME --study demo-difficulty``,
NAME an annotator resuming (with votes already, so the study opens on the item, as it
does in every version), started in a tmux pane (100 x 32, the server already
running), timed from the spawn to the first item's confirmed paint, read from the app's
paint log
(``ANNOTATE_PAINT_LOG``: the monotonic time Textual confirmed the frame, the same
clock as this script's).

The load average is printed before and after: the timings mean something only on a
quiet machine (load well under the number of CPUs).

Run:  .venv/bin/python benchmarks/bench_cli.py [--runs 10] [--root DIR] [--quick | --app-only]
``--root DIR`` times another checkout's ``annotate`` package (a ``git archive`` of an
older commit, say) with this interpreter, through ``python -m annotate`` (and its
``annotate.__main__.main`` as the console script); its results say which tree ran.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "annotate"

HELP_COMMANDS: list[tuple[str, ...]] = [
    ("--help",),
    ("--version",),
    ("studies", "--help"),
    ("import", "--help"),
    ("export", "--help"),
    ("rank", "--help"),
    ("rate", "--help"),
    ("report", "--help"),
    ("simulate", "--help"),
    ("monitor", "--help"),
    ("app", "--help"),
]

BATTLES = (
    "model_a,model_b,winner,judge\n"
    "m1,m2,model_a,j1\nm2,m3,tie,j2\nm3,m1,model_b,j1\nm1,m3,model_a,j3\n"
)
"""A 4-row Chatbot Arena battle file."""


def entry_points(root: Path | None) -> dict[str, list[str]]:
    if root is None:
        return {"script": [str(SCRIPT)], "module": [sys.executable, "-m", "annotate"]}
    # Another tree: its own __main__.main stands in for the console script.
    script = "import sys; from annotate.__main__ import main; sys.exit(main())"
    return {"script": [sys.executable, "-c", script], "module": [sys.executable, "-m", "annotate"]}


CPU_MS: dict[int, list[float]] = {}
"""CPU milliseconds (user + system) of the runs, by ``id`` of their list of wall times."""


def timed_runs(argv: Sequence[str], env: dict[str, str], runs: int, cwd: Path) -> list[float]:
    """Wall milliseconds of ``runs`` fresh processes; NaN for a run that failed.

    Their CPU milliseconds (less sensitive to the load than the wall time) are kept in
    :data:`CPU_MS` under ``id`` of the returned list.
    """
    out: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run(
            list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        ms = (time.perf_counter() - t0) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.append(ms if res.returncode == 0 else float("nan"))
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        cpu.append(used * 1000)
    CPU_MS[id(out)] = cpu
    return out


def import_runs(base: list[str], env: dict[str, str], runs: int, tmp: Path) -> list[float]:
    """A 4-row battle file imported into a new database each run."""
    battles = tmp / "battles.csv"
    battles.write_text(BATTLES)
    out: list[float] = []
    cpu: list[float] = []
    for i in range(runs):
        db = tmp / f"import-{base[-1].replace('/', '_')}-{i}.db"
        argv = [*base, "import", "--db", str(db), str(battles), "--format", "chatbot-arena"]
        one = timed_runs(argv, env, 1, tmp)
        out.extend(one)
        cpu.extend(CPU_MS.pop(id(one)))
    CPU_MS[id(out)] = cpu
    return out


def first_item_runs(base: list[str], db: Path, env: dict[str, str], runs: int) -> list[float]:
    """Spawn to the first item's confirmed paint, in a tmux pane; [] without tmux."""
    if shutil.which("tmux") is None:
        return []
    sock = f"bench-cli-{os.getpid()}-{time.monotonic_ns()}"
    tmux = ["tmux", "-L", sock]
    # Started outside the repository: ``python -m`` and ``-c`` put the current folder first
    # on sys.path, where this checkout's ``annotate`` would shadow the one of ``--root``.
    here = ["-c", str(db.parent)]
    size = ["-x", "100", "-y", "32"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "b", *size, *here, "sleep 100000"], check=True, env=env
    )
    out: list[float] = []
    cpu: list[float] = []
    try:
        for i in range(runs):
            log = db.parent / f"paint-{i}-{time.monotonic_ns()}.log"
            cmd = " ".join(
                [
                    "exec env",
                    f"ANNOTATE_PAINT_LOG={log}",
                    *(f"'{a}'" for a in base),
                    "--db",
                    str(db),
                    "--annotator",
                    f"pre{i % 10}",  # resuming: no instructions before the item
                    "--study",
                    "demo-difficulty",
                ]
            )
            t0 = time.monotonic_ns()
            subprocess.run(
                [*tmux, "respawn-pane", "-k", "-t", "b", *here, cmd],
                check=True,
                env=env,
            )
            pid = subprocess.run(
                [*tmux, "display-message", "-p", "-t", "b", "#{pane_pid}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            while not (log.exists() and log.read_text().strip()):
                if time.monotonic_ns() - t0 > 60e9:
                    screen = subprocess.run(
                        [*tmux, "capture-pane", "-p", "-t", "b"], capture_output=True, text=True
                    ).stdout
                    raise RuntimeError(f"no first item painted after 60 s; the pane:\n{screen}")
                time.sleep(0.002)
            cpu.append(_process_cpu_ms(int(pid)))
            painted = int(log.read_text().splitlines()[0].split("\t")[1])
            out.append((painted - t0) / 1e6)
            subprocess.run([*tmux, "respawn-pane", "-k", "-t", "b", "sleep 100000"], check=True)
            time.sleep(0.3)  # let the app's exit finish before the next start
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
    CPU_MS[id(out)] = cpu
    return out


def _process_cpu_ms(pid: int) -> float:
    """User + system CPU milliseconds process ``pid`` has used so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def prepare_db(db: Path, env: dict[str, str], base: list[str]) -> None:
    """The demo studies and a few hundred votes (so ``studies`` counts something)."""
    subprocess.run(
        [*base, "import", "--db", str(db), "--demo"],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
        cwd=db.parent,  # not the repository (see first_item_runs)
    )
    import sqlite3
    import uuid

    with sqlite3.connect(db) as con:
        study_id, items = con.execute(
            "SELECT s.id, group_concat(i.id) FROM study s JOIN item i ON i.study_id = s.id "
            "WHERE s.name = 'demo-difficulty'"
        ).fetchone()
        item_ids = [int(x) for x in items.split(",")]
        for a in range(10):
            con.execute(
                "INSERT INTO annotator (name, created_at) VALUES (?, datetime('now'))", (f"pre{a}",)
            )
            ann = con.execute("SELECT id FROM annotator WHERE name = ?", (f"pre{a}",)).fetchone()[0]
            for item in item_ids[:30]:
                con.execute(
                    "INSERT INTO vote (uuid, study_id, annotator_id, item_id, choice, swapped, "
                    "response_ms, fast, created_at) VALUES (?, ?, ?, ?, 'first', 0, 4000, 0, "
                    "datetime('now'))",
                    (uuid.uuid4().hex, study_id, ann, item),
                )


def summary(xs: list[float]) -> tuple[str, str]:
    if not xs:
        return "skipped", ""
    if any(x != x for x in xs):
        return "failed", f"{sum(x != x for x in xs)}/{len(xs)}"
    s = sorted(xs)
    p90 = s[min(len(s) - 1, int(0.9 * len(s)))]
    return f"{statistics.median(s):.0f}", f"{p90:.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--app-runs", type=int, default=None, help="default: --runs")
    ap.add_argument("--root", type=Path, default=None, help="time this tree's annotate package")
    ap.add_argument(
        "--app-only",
        action="store_true",
        help="only the app's time to first item (no command rows)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="only --help, studies, the import and the app (for slow trees or busy machines)",
    )
    args = ap.parse_args()
    root = args.root.resolve() if args.root else None
    eps = entry_points(root)
    load_before = os.getloadavg()
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; tree: {root or ROOT}; {os.cpu_count()} CPUs"
    )
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        env = {**os.environ, "ANNOTATE_DATA_DIR": str(tmp / "data"), "COLUMNS": "100"}
        if root is not None:
            env["PYTHONPATH"] = str(root)
        (tmp / "data").mkdir()
        db = tmp / "bench.db"
        prepare_db(db, env, eps["module"])
        rows: list[tuple[str, list[float], list[float]]] = []
        commands: list[tuple[str, ...]] = [
            *(HELP_COMMANDS[:1] if args.quick else HELP_COMMANDS),
            ("studies", "--db", str(db)),
            *([] if args.quick else [("studies", "--db", str(db), "--json")]),
        ]
        if args.app_only:
            commands = []
        for command in commands:
            label = " ".join("DB" if c == str(db) else c for c in command)
            rows.append(
                (
                    f"annotate {label}",
                    timed_runs([*eps["script"], *command], env, args.runs, tmp),
                    timed_runs([*eps["module"], *command], env, args.runs, tmp),
                )
            )
        if not args.app_only:
            rows.append(
                (
                    "annotate import (4-row battle file, new DB)",
                    import_runs(eps["script"], env, args.runs, tmp),
                    import_runs(eps["module"], env, args.runs, tmp),
                )
            )
        app_runs = args.app_runs or args.runs
        rows.append(
            (
                "app: spawn -> first item painted (tmux)",
                first_item_runs(eps["script"], db, env, app_runs),
                first_item_runs(eps["module"], db, env, app_runs),
            )
        )
    print()
    head = f"wall ms, median and p90 of {args.runs} runs"
    print(f"{head:<46} {'script':>7} {'p90':>6} {'-m':>7} {'p90':>6} {'cpu ms':>7}")
    print("-" * 84)
    for name, script, module in rows:
        s_med, s_p90 = summary(script)
        m_med, m_p90 = summary(module)
        cpu = CPU_MS.get(id(script), [])
        cpu_med = f"{statistics.median(cpu):.0f}" if cpu else ""
        print(f"{name:<46} {s_med:>7} {s_p90:>6} {m_med:>7} {m_p90:>6} {cpu_med:>7}")
    print(
        "cpu ms: median user + system CPU of the console-script runs (app: of the app's "
        "process when its first paint was seen, 10 ms clock ticks)"
    )
    load_after = os.getloadavg()
    print()
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print("targets (quiet machine): --help and studies < 300 ms; first item painted < 800 ms")


if __name__ == "__main__":
    main()
