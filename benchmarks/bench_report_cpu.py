"""CPU time of the report's alignment, agreement and human-scale stages (issue 13).

Run: .venv/bin/python benchmarks/bench_report_cpu.py --db PATH --study NAME
         [--baseline DIR] [--rounds N] [--runs N] [--report]

On an existing difficulty study (``annotate report``'s 1,000 annotators x 1,000 pairs study,
say), the study's data is read once (``annotate.services.report._load``, ``_columns`` and
``_subgroup_columns`` of this checkout, pickled); then each round starts a fresh process
per tree that times, ``--runs`` times over, with BLAS on one thread as in the report and
the report's seeds (``SeedSequence(0).spawn(2)``, 1,000 replicates, scheme "both"):

* ``load_votes``: ``_load_votes`` on the votes as the report's worker hands them over
  (``StudyMonitor.current_votes()``' rows and names, read once in the preparation);
* ``estimators``: ``_columns`` + ``_subgroup_columns``;
* ``align``: ``_align`` on every column (``alignment_report`` inside);
* ``agreement``: ``_agreement`` (``agreement_bootstrap``, pairwise kappa, leave-one-out);
* ``human_scale``: ``_human_scale`` (am-ELO per group of linked questions);

as process CPU seconds (``time.process_time``), the minimum over the runs, the load
average beside each line. With ``--baseline DIR`` (older code: ``git archive REV annotate
ranking | tar -x -C DIR``) the rounds alternate between that code and this checkout and the
results of the two are compared: every stage's output must be identical, bit for bit
(:func:`_bits`).

``--report`` also times the whole ``human_alignment_report`` (``ANNOTATE_CACHE=off``) in a
fresh process per tree and round: wall, process CPU, the per-stage wall seconds it records
(``timings``), and the load.
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
STAGES = ("load_votes", "estimators", "align", "agreement", "human_scale")


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _bits(x: object) -> object:
    """A form of a result that compares equal only when it is the same bit for bit:
    dataclasses field by field, arrays by dtype, shape and bytes (and mask), sequences
    and dicts item by item, anything else by ``repr`` (floats exact); as
    ``tests/ranking/bits.py``."""
    import dataclasses

    import numpy as np

    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, [_bits(getattr(x, f.name)) for f in dataclasses.fields(x)])
    if isinstance(x, np.ma.MaskedArray):
        return ("masked", _bits(np.ma.getdata(x)), _bits(np.ma.getmaskarray(x)))
    if isinstance(x, np.ndarray):
        return (str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, list | tuple):
        return [_bits(v) for v in x]
    if isinstance(x, dict):
        return sorted((k, _bits(v)) for k, v in x.items())
    return repr(x)


def _prepare(db: str, study: str, out: str) -> None:
    """The study's data and difficulty columns, as the report builds them, pickled."""
    import annotate.services.report as rp
    from annotate.services.db import open_store
    from annotate.store.engine import reader_engine

    engine = reader_engine(open_store(db))
    data = rp._load(engine, study)
    cols, _ = rp._columns(data, rp.ESTIMATORS, None)
    sub = rp._subgroup_columns(data, rp.SUBGROUP_METHODS)
    static = rp._load_study(engine, study)
    monitor = rp._monitor(engine, study)
    assert monitor is not None
    read = monitor.current_votes()
    with open(out, "wb") as f:
        pickle.dump((data, cols, sub, static, read), f, protocol=5)


def _stages(inputs: str, runs: int, result: str | None) -> None:
    """Time the stages ``runs`` times; print the minimum CPU seconds of each."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    import annotate.services.report as rp

    with open(inputs, "rb") as f:
        data, cols, sub, static, read = pickle.load(f)
    best = dict.fromkeys(STAGES, float("inf"))
    out: dict[str, object] = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(runs):
            rng_align, rng_agree = (
                np.random.default_rng(s) for s in np.random.SeedSequence(0).spawn(2)
            )
            t = time.process_time()
            # the monitor is not used when its rows are given (``read``)
            out["load_votes"] = rp._load_votes(None, static, object(), read)
            best["load_votes"] = min(best["load_votes"], time.process_time() - t)
            t = time.process_time()
            out["estimators"] = (
                rp._columns(data, rp.ESTIMATORS, None),
                rp._subgroup_columns(data, rp.SUBGROUP_METHODS),
            )
            best["estimators"] = min(best["estimators"], time.process_time() - t)
            t = time.process_time()
            out["align"] = rp._align(
                data,
                cols + sub,
                n_boot=1000,
                rng=rng_align,
                confidence=0.95,
                near_tie_margin=0.0,
                resample="both",
            )
            best["align"] = min(best["align"], time.process_time() - t)
            t = time.process_time()
            out["agreement"] = rp._agreement(
                data, n_boot=1000, rng=rng_agree, confidence=0.95, resample="both"
            )
            best["agreement"] = min(best["agreement"], time.process_time() - t)
            t = time.process_time()
            out["human_scale"] = rp._human_scale(data, cols, 0.95)
            best["human_scale"] = min(best["human_scale"], time.process_time() - t)
    print(" ".join(f"{best[s]:.3f}" for s in STAGES))
    if result:
        with open(result, "wb") as f:
            pickle.dump({k: _bits(v) for k, v in out.items()}, f)


def _report(db: str, study: str) -> None:
    """The whole report once: wall, process CPU and its recorded stage timings."""
    os.environ["ANNOTATE_CACHE"] = "off"
    from annotate.services.db import open_store
    from annotate.services.report import human_alignment_report
    from annotate.store.engine import reader_engine

    engine = reader_engine(open_store(db))
    c, w = time.process_time(), time.perf_counter()
    rep = human_alignment_report(engine, study)
    c, w = time.process_time() - c, time.perf_counter() - w
    stages = " ".join(f"{s}={v:.2f}" for s, v in rep.timings)
    print(f"wall {w:.2f} cpu {c:.2f} | {stages}")


def _run(code: Path, *argv: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(code), "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, "-P", __file__, *argv]
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--study", required=True)
    ap.add_argument(
        "--baseline", type=Path, help="older code: a folder with annotate/ and ranking/"
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per process (the minimum kept)")
    ap.add_argument("--report", action="store_true", help="also time the whole report")
    ap.add_argument("--child", choices=("prepare", "stages", "report"), help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "prepare":
        _prepare(args.db, args.study, args.inputs)
        return
    if args.child == "stages":
        _stages(args.inputs, args.runs, args.result)
        return
    if args.child == "report":
        _report(args.db, args.study)
        return

    trees = [("this", HERE)]
    if args.baseline is not None:
        trees.insert(0, ("baseline", args.baseline.resolve()))
    print(f"# bench_report_cpu --db {args.db} --study {args.study}; load {_load()}")
    with tempfile.TemporaryDirectory() as tmp:
        inputs = str(Path(tmp) / "inputs.pkl")
        base = ["--db", args.db, "--study", args.study]
        _run(HERE, *base, "--child", "prepare", "--inputs", inputs)
        cpu: dict[str, list[list[float]]] = {name: [] for name, _ in trees}
        for r in range(args.rounds):
            for name, code in trees:
                result = str(Path(tmp) / f"{name}-{r}.pkl")
                line = _run(
                    code, *base, "--child", "stages", "--inputs", inputs, "--runs",
                    str(args.runs), "--result", result,
                )  # fmt: skip
                values = [float(x) for x in line.split()]
                cpu[name].append(values)
                shown = "  ".join(f"{s} {v:.3f}" for s, v in zip(STAGES, values, strict=True))
                print(f"stages {name:8s} round {r}: {shown}  load {_load()}", flush=True)
        for name, _ in trees:
            med = [statistics.median(v[i] for v in cpu[name]) for i in range(len(STAGES))]
            shown = "  ".join(f"{s} {v:.3f}" for s, v in zip(STAGES, med, strict=True))
            print(f"stages {name:8s} median: {shown}  sum {sum(med):.3f}")
        if args.baseline is not None:
            with open(Path(tmp) / "baseline-0.pkl", "rb") as f:
                a = pickle.load(f)
            with open(Path(tmp) / "this-0.pkl", "rb") as f:
                b = pickle.load(f)
            same = [s for s in STAGES if a[s] == b[s]]
            differ = [s for s in STAGES if a[s] != b[s]]
            shown_same, shown_differ = ", ".join(same) or "none", ", ".join(differ) or "none"
            print(f"results identical: {shown_same}; differ: {shown_differ}")
        if args.report:
            for r in range(args.rounds):
                for name, code in trees:
                    line = _run(code, *base, "--child", "report")
                    print(f"report {name:8s} round {r}: {line} | load {_load()}", flush=True)


if __name__ == "__main__":
    main()
