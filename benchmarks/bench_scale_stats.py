"""Scale benchmark of the statistics (issue 13), each beside its peers, in one run.

Run: .venv/bin/python benchmarks/bench_scale_stats.py
     [--battles 10000,100000,1000000,10000000] [--am-elo 1000000] [--stable-arena 10000000]
     [--alpha 100x10000] [--eip 1000000x2000] [--repeat 3] [--quick] [--out FILE]

``--quick`` is ``--battles 10000,100000 --am-elo 100000 --stable-arena 100000
--alpha 100x1000 --eip 10000x200 --repeat 3``; a size list left empty (``--eip ""``)
skips that row. Steps:

* ``m-elo`` vs ``choix`` vs ``evalica`` at each ``--battles`` size: the children of
  ``bench_scale.py`` (its simulated battles, 200 models, one annotator per 1,000
  battles; choix ``ilsr_pairwise_dense`` with the aggregation into its dense win
  matrix included, evalica ``bradley_terry`` with the list conversion included);
* ``am-elo`` (:func:`ranking.pairwise.am_elo`) and ``stable_arena``
  (:func:`ranking.arena.stable_arena`, defaults) on the same kind of battles;
* ``alpha`` (:func:`ranking.agreement.krippendorff_alpha`, nominal) vs the
  ``krippendorff`` package (``krippendorff.alpha``) vs evalica (``evalica.alpha`` on a
  DataFrame, the DataFrame built outside the timing): raters x units of codes 1-5,
  20% missing, seed 0;
* ``eip`` (:func:`ranking.eip`, default ``n_jobs``: every available core) on the
  Rasch-model uint8 matrix of ``bench_eip.py`` (paper Table 4: 5.28 s at 1M x 2,000).

Every step runs in a fresh subprocess (``OPENBLAS_NUM_THREADS=1``); its times are the
wall time and the CPU time (``getrusage``: the process, its threads and its waited-for
children, i.e. EIP's forked workers) of the call only, after a warm-up call on a small
input (imports and first calls are not counted); on a shared machine the CPU time is
the steadier figure. Its peak memory is the subprocess's peak RSS (``VmHWM``:
interpreter, libraries and input included). The alpha rows also give the tracemalloc
peak of one more, untimed call (the memory the call itself allocates, as the issue
compares it). Repeats run interleaved (every method once, then again); the tables show
medians, and the ratios are a peer's median wall and CPU time over ours (above 1: ours
is faster).
The load average is printed beside every block: the machine may be shared.
Prints tables (and writes them to ``--out``); asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_scale import build_battles, installed, load, peak_rss_mib  # noqa: E402

QUICK = {
    "battles": "10000,100000",
    "am_elo": "100000",
    "stable_arena": "100000",
    "alpha": "100x1000",
    "eip": "10000x200",
}


def alpha_data(raters: int, units: int) -> Any:
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.integers(1, 6, (raters, units)).astype(np.float64)
    x[rng.random((raters, units)) < 0.2] = np.nan
    return x


def cpu_now() -> float:
    """CPU seconds of this process and its waited-for children (EIP's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def rating_fit(step: str) -> Any:
    """The rating steps of ``bench_scale.py``'s children, as functions of the arrays."""
    import numpy as np

    def fit(a: Any, b: Any, k: Any, w: Any) -> str:
        if step == "m-elo":
            from ranking.pairwise import m_elo

            return f"{m_elo(a, b, w).iterations} iterations"
        if step == "am-elo":
            from ranking.pairwise import am_elo

            return f"{am_elo(a, b, k, w).iterations} iterations"
        if step == "stable-arena":
            from ranking.arena import stable_arena

            res = stable_arena(a, b, k, w)
            return f"{int(np.sum(np.asarray(res.status) == 'flagged'))} flagged"
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

    return fit


def child_stats(step: str, arg: str) -> dict[str, Any]:
    """One step in this (fresh) process: time and CPU of the call, peak memory."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    traced = None
    if step in ("m-elo", "am-elo", "choix", "evalica", "stable-arena"):
        d = np.load(arg)
        a, b, k, w = d["a"], d["b"], d["k"], d["w"]
        fit = rating_fit(step)
        small = min(len(a), 20_000)
        with contextlib.suppress(Exception):  # imports and first-call setup only
            fit(a[:small], b[:small], k[:small], w[:small])
        c0, t0 = cpu_now(), time.perf_counter()
        note = fit(a, b, k, w)
        seconds, cpu = time.perf_counter() - t0, cpu_now() - c0
    elif step in ("alpha", "krippendorff", "evalica-alpha"):
        raters, units = (int(v) for v in arg.split("x"))
        x = alpha_data(raters, units)
        small = alpha_data(10, 50)
        if step == "alpha":
            from ranking.agreement import krippendorff_alpha

            def fit(x: Any) -> float:
                return float(krippendorff_alpha(x, level="nominal").value)  # type: ignore[arg-type]

        elif step == "krippendorff":
            import krippendorff

            def fit(x: Any) -> float:
                return float(krippendorff.alpha(reliability_data=x, level_of_measurement="nominal"))

        else:
            import evalica
            import pandas as pd

            frames = {id(x): pd.DataFrame(x), id(small): pd.DataFrame(small)}

            def fit(x: Any) -> float:
                return float(evalica.alpha(frames[id(x)]).alpha)

        fit(small)
        c0, t0 = cpu_now(), time.perf_counter()
        value = fit(x)
        seconds, cpu = time.perf_counter() - t0, cpu_now() - c0
        tracemalloc.start()
        fit(x)
        traced = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        note = f"alpha {value:.12f}"
    elif step == "eip":
        from bench_eip import make_matrix

        import ranking

        n_q, n_m = (int(v) for v in arg.split("x"))
        ranking.eip(make_matrix(200, 20))
        A = make_matrix(n_q, n_m)
        c0, t0 = cpu_now(), time.perf_counter()
        res = ranking.eip(A)
        seconds, cpu = time.perf_counter() - t0, cpu_now() - c0
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        note = f"{res.iterations} iterations, {cores} cores (n_jobs default)"
    else:
        raise SystemExit(f"unknown step {step}")
    out = {"seconds": seconds, "cpu": cpu, "peak_mib": peak_rss_mib(), "note": note}
    if traced is not None:
        out["traced_mib"] = traced
    return out


def run(step: str, arg: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-P", __file__, "--child", step, arg],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def row(name: str, size: str, runs: list[dict[str, Any]], ref: tuple[float, float] | None) -> str:
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        return f"| {name} | {size} | failed: {errors[0][:90]} | | | | |"
    t = statistics.median(r["seconds"] for r in runs)
    cpu = statistics.median(r["cpu"] for r in runs)
    mem = statistics.median(r["peak_mib"] for r in runs)
    if "traced_mib" in runs[0]:
        mem_s = f"{mem:,.0f} (call {statistics.median(r['traced_mib'] for r in runs):.1f})"
    else:
        mem_s = f"{mem:,.0f}"
    ratio = "" if ref is None else f"{t / ref[0]:.2f}x / {cpu / ref[1]:.2f}x"
    spread = ", ".join(f"{r['seconds']:.3f}" for r in runs)
    return (
        f"| {name} | {size} | {t:.4f} ({spread}) | {cpu:.4f} | {mem_s} | {ratio} "
        f"| {runs[-1]['note']} |"
    )


HEAD = (
    "| step | size | median wall s (runs) | median CPU s | peak RSS MiB (call's tracemalloc "
    "peak) | peer / ours: wall / CPU | note |\n|---|---|---|---|---|---|---|"
)


def block(
    title: str,
    size: str,
    steps: list[tuple[str, str, Any]],
    repeat: int,
    emit: Any,
) -> None:
    """Run ``steps`` (name, child step, arg) interleaved; the first is ours."""
    emit(f"\n### {title}; {load()}\n")
    emit(HEAD)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in steps}
    for _ in range(repeat):
        for name, step, arg in steps:
            runs[name].append(run(step, arg))
    ok = [r for r in runs[steps[0][0]] if "seconds" in r]
    ref = None
    if ok:
        ref = (statistics.median(r["seconds"] for r in ok), statistics.median(r["cpu"] for r in ok))
    for i, (name, _, _) in enumerate(steps):
        emit(row(name, size, runs[name], None if i == 0 else ref))
    emit(f"({load()})")


def sizes(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", default="10000,100000,1000000,10000000")
    parser.add_argument("--am-elo", default="1000000")
    parser.add_argument("--stable-arena", default="10000000")
    parser.add_argument("--alpha", default="100x10000", help="RATERSxUNITS, comma-separated")
    parser.add_argument("--eip", default="1000000x2000", help="QUESTIONSxMODELS, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes (see the docstring)")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    parser.add_argument("--child", nargs=2, metavar=("STEP", "ARG"))
    args = parser.parse_args()
    if args.child:
        step, arg = args.child
        print(json.dumps(child_stats(step, arg)))
        return
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    lines: list[str] = []

    def emit(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    emit(f"# bench_scale_stats: python {sys.version.split()[0]}, {load()}")
    emit(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    missing = [p for p in ("choix", "evalica", "krippendorff") if not installed(p)]
    if missing:
        emit(f"not installed (their rows fail): {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="bench-scale-stats-") as tmp:
        root = Path(tmp)
        battle_sizes = sorted(
            set(sizes(args.battles)) | set(sizes(args.am_elo)) | set(sizes(args.stable_arena))
        )
        for n in battle_sizes:
            data = root / f"b{n}.npz"
            build_battles(data, n)
            if n in sizes(args.battles):
                block(
                    f"m-ELO at {n:,} battles (200 models)",
                    f"{n:,}",
                    [
                        ("m-elo", "m-elo", str(data)),
                        ("choix", "choix", str(data)),
                        ("evalica", "evalica", str(data)),
                    ],
                    args.repeat,
                    emit,
                )
            if n in sizes(args.am_elo):
                block(
                    f"am-ELO at {n:,} battles",
                    f"{n:,}",
                    [("am-elo", "am-elo", str(data))],
                    args.repeat,
                    emit,
                )
            if n in sizes(args.stable_arena):
                block(
                    f"stable_arena at {n:,} battles",
                    f"{n:,}",
                    [("stable_arena", "stable-arena", str(data))],
                    args.repeat,
                    emit,
                )
            data.unlink()
    for size in [s for s in args.alpha.split(",") if s.strip()]:
        block(
            f"Krippendorff's alpha (nominal), {size} raters x units",
            size,
            [
                ("alpha", "alpha", size),
                ("krippendorff", "krippendorff", size),
                ("evalica", "evalica-alpha", size),
            ],
            args.repeat,
            emit,
        )
    for size in [s for s in args.eip.split(",") if s.strip()]:
        block(f"EIP {size} questions x models", size, [("eip", "eip", size)], args.repeat, emit)
    emit(f"\ndone; {load()}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
