"""CPU time of the report's "verdicts" stage (issue 13): the monitor's Stable Arena refit.

Run: .venv/bin/python benchmarks/bench_verdicts_cpu.py --db PATH --study NAME
         [--baseline DIR] [--runs N]

On an existing study database (``annotate report``'s 1,000 annotators x 1,000 pairs
difficulty study, say), each run is a fresh process with BLAS on one thread, as in the
report, and times:

* ``snapshot``: ``StudyMonitor(engine, study).snapshot()`` cold (``ANNOTATE_CACHE=off``):
  process CPU time (with the monitor's signal threads) and the calling thread's CPU time;
* ``components``: ``ranking.components.stable_arena_components`` on the vote arrays that
  snapshot passes it (captured once, fresh delta caches and no warm starts, as cold),
  thread CPU time of a second call (the first one imports and warms up).

With ``--baseline DIR`` (older code: ``git archive REV annotate ranking | tar -x -C DIR``)
the runs alternate between that code and this checkout, the load average printed beside
each, and the verdicts of both are compared: whether the ``stable_arena_components``
results are identical, every float bit for bit, and where not, which fields differ and by
how much.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _child(args: argparse.Namespace) -> None:
    """One measurement in this process (``--child snapshot|components``)."""
    from threadpoolctl import threadpool_limits

    if args.child == "snapshot":
        from annotate.services.db import open_store
        from annotate.services.monitoring import StudyMonitor
        from annotate.store.engine import reader_engine

        engine = reader_engine(open_store(args.db))
        mon = StudyMonitor(engine, args.study)
        p0, t0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
        mon.snapshot()
        p1, t1, w1 = time.process_time(), time.thread_time(), time.perf_counter()
        print(f"{p1 - p0:.3f} {t1 - t0:.3f} {w1 - w0:.3f}")
        return
    import ranking.components as rc

    with open(args.inputs, "rb") as f:
        a, kw = pickle.load(f)
    with threadpool_limits(1, "blas"):
        rc.stable_arena_components(*a, **kw, delta_caches={}, warm_starts={})
        t0, w0 = time.thread_time(), time.perf_counter()
        res = rc.stable_arena_components(*a, **kw, delta_caches={}, warm_starts={})
        t1, w1 = time.thread_time(), time.perf_counter()
    if args.result:
        with open(args.result, "wb") as f:
            pickle.dump(res, f)
    print(f"{t1 - t0:.3f} {t1 - t0:.3f} {w1 - w0:.3f}")


def _capture(db: str, study: str, out: str) -> None:
    """The arguments the monitor's snapshot passes to stable_arena_components."""
    import annotate.services.monitoring as monitoring
    from annotate.services.db import open_store
    from annotate.store.engine import reader_engine

    got: list[tuple[tuple, dict]] = []
    real = monitoring.stable_arena_components

    def spy(*a, **kw):  # type: ignore[no-untyped-def]
        keep = {k: v for k, v in kw.items() if k not in ("delta_caches", "warm_starts")}
        got.append((a, keep))
        return real(*a, **kw)

    monitoring.stable_arena_components = spy
    monitoring.StudyMonitor(reader_engine(open_store(db)), study).snapshot()
    monitoring.stable_arena_components = real
    if len(got) != 1:
        raise SystemExit(f"expected one stable_arena_components call, got {len(got)}")
    with open(out, "wb") as f:
        pickle.dump(got[0], f)


def _same(x: object, y: object) -> bool:
    """Equal, floats bit for bit (NaN equal to NaN)."""
    import dataclasses

    import numpy as np

    if isinstance(x, np.ndarray):
        return (
            isinstance(y, np.ndarray)
            and x.dtype == y.dtype
            and x.shape == y.shape
            and x.tobytes() == y.tobytes()
        )
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return type(x) is type(y) and all(
            _same(getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x)
        )
    if isinstance(x, list | tuple):
        return (
            isinstance(y, list | tuple)
            and len(x) == len(y)
            and all(_same(u, v) for u, v in zip(x, y, strict=True))
        )
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
        return True
    if isinstance(x, BaseException):
        return type(x) is type(y) and str(x) == str(y)
    return bool(x == y)


def _differences(x: object, y: object, path: str) -> list[str]:
    """Where ``x`` and ``y`` differ (see :func:`_same`): float arrays with the largest
    absolute and relative difference, anything else by value."""
    import dataclasses

    import numpy as np

    if _same(x, y):
        return []
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.shape == y.shape:
        if x.dtype.kind == "f" and y.dtype.kind == "f":
            d = np.abs(x - y)
            bad = ~((x == y) | (np.isnan(x) & np.isnan(y)))
            rel = d[bad] / np.maximum(np.abs(x[bad]), 1e-300)
            return [
                f"{path}: {int(bad.sum())} of {x.size} values, max abs {np.nanmax(d[bad]):.3g}, "
                f"max rel {np.nanmax(rel):.3g}"
            ]
        return [f"{path}: {int((x != y).sum())} of {x.size} values"]
    if dataclasses.is_dataclass(x) and not isinstance(x, type) and type(x) is type(y):
        return [
            line
            for f in dataclasses.fields(x)
            for line in _differences(getattr(x, f.name), getattr(y, f.name), f"{path}.{f.name}")
        ]
    if isinstance(x, list | tuple) and isinstance(y, list | tuple) and len(x) == len(y):
        return [
            line
            for i, (u, v) in enumerate(zip(x, y, strict=True))
            for line in _differences(u, v, f"{path}[{i}]")
        ]
    if isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
        return [line for k in x for line in _differences(x[k], y[k], f"{path}[{k!r}]")]
    return [f"{path}: {x!r} != {y!r}"[:300]]


def _run(code: Path, mode: str, args: argparse.Namespace, result: str = "") -> list[float]:
    env = dict(os.environ, PYTHONPATH=str(code), ANNOTATE_CACHE="off")
    cmd = [sys.executable, __file__, "--child", mode, "--db", args.db, "--study", args.study]
    cmd += ["--inputs", args.inputs] + (["--result", result] if result else [])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=code)
    return [float(v) for v in out.stdout.split()[-3:]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--study", required=True)
    ap.add_argument("--baseline", help="a copy of older annotate/ranking to alternate with")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", choices=("snapshot", "components"), help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args)
        return
    codes = {"this": HERE}
    if args.baseline:
        codes = {"base": Path(args.baseline).resolve(), "this": HERE}
    with tempfile.TemporaryDirectory() as tmp:
        args.inputs = str(Path(tmp) / "inputs.pkl")
        _capture(args.db, args.study, args.inputs)
        print(f"# {args.db} study {args.study}; load {_load()}")
        for mode in ("components", "snapshot"):
            cols = (
                "thread_cpu thread_cpu wall" if mode == "components" else "proc_cpu thread_cpu wall"
            )
            print(f"## {mode}: seconds ({cols}) per run, alternating")
            times: dict[str, list[list[float]]] = {name: [] for name in codes}
            for r in range(args.runs):
                for name, code in codes.items():
                    res = str(Path(tmp) / f"{name}.pkl") if mode == "components" and r == 0 else ""
                    t = _run(code, mode, args, res)
                    times[name].append(t)
                    row = f"{t[0]:.3f} {t[1]:.3f} {t[2]:.3f}"
                    print(f"{mode:10s} {name:4s} run {r}: {row}  load {_load()}")
            for name, ts in times.items():
                med = [statistics.median(t[i] for t in ts) for i in range(3)]
                print(f"{mode:10s} {name:4s} median: {med[0]:.3f} {med[1]:.3f} {med[2]:.3f}")
        if args.baseline:
            with open(Path(tmp) / "base.pkl", "rb") as f:
                base = pickle.load(f)
            with open(Path(tmp) / "this.pkl", "rb") as f:
                this = pickle.load(f)
            print("components results identical (every float bit for bit):", _same(base, this))
            for line in _differences(base, this, "result"):
                print("  differs:", line)


if __name__ == "__main__":
    main()
