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

Every step runs in a fresh subprocess (``OPENBLAS_NUM_THREADS=1``); its time is the
wall time of the call only, after a warm-up call on a small input (imports and first
calls are not counted), and its peak memory the subprocess's peak RSS (``VmHWM``:
interpreter, libraries and input included). The alpha rows also give the tracemalloc
peak of one more, untimed call (the memory the call itself allocates, as the issue
compares it). Repeats run interleaved (every method once, then again); the tables show
medians, and the ratio is a peer's median time over ours (above 1: ours is faster).
The load average is printed beside every block: the machine may be shared.
Prints tables (and writes them to ``--out``); asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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

from bench_scale import build_battles, child, installed, load, peak_rss_mib  # noqa: E402

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


def child_stats(step: str, arg: str) -> dict[str, Any]:
    """Steps not in bench_scale.py: stable_arena, the alpha trio and EIP."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    traced = None
    if step == "stable-arena":
        from ranking.arena import stable_arena

        d = np.load(arg)
        a, b, k, w = d["a"], d["b"], d["k"], d["w"]
        with contextlib.suppress(Exception):
            stable_arena(a[:20_000], b[:20_000], k[:20_000], w[:20_000])
        t0 = time.perf_counter()
        res = stable_arena(a, b, k, w)
        seconds = time.perf_counter() - t0
        note = f"{int(np.sum(res.flags))} flagged" if hasattr(res, "flags") else ""
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
        t0 = time.perf_counter()
        value = fit(x)
        seconds = time.perf_counter() - t0
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
        t0 = time.perf_counter()
        res = ranking.eip(A)
        seconds = time.perf_counter() - t0
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        note = f"{res.iterations} iterations, {cores} cores (n_jobs default)"
    else:
        raise SystemExit(f"unknown step {step}")
    out = {"seconds": seconds, "peak_mib": peak_rss_mib(), "note": note}
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


def row(name: str, size: str, runs: list[dict[str, Any]], ref: float | None) -> str:
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        return f"| {name} | {size} | failed: {errors[0][:90]} | | | |"
    t = statistics.median(r["seconds"] for r in runs)
    mem = statistics.median(r["peak_mib"] for r in runs)
    if "traced_mib" in runs[0]:
        mem_s = f"{mem:,.0f} (call {statistics.median(r['traced_mib'] for r in runs):.1f})"
    else:
        mem_s = f"{mem:,.0f}"
    ratio = "" if ref is None else f"{t / ref:.2f}x"
    spread = ", ".join(f"{r['seconds']:.3f}" for r in runs)
    return f"| {name} | {size} | {t:.4f} ({spread}) | {mem_s} | {ratio} | {runs[-1]['note']} |"


HEAD = (
    "| step | size | median s (runs) | peak RSS MiB (call's tracemalloc peak) "
    "| peer / ours | note |\n|---|---|---|---|---|---|"
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
    ok = [r["seconds"] for r in runs[steps[0][0]] if "seconds" in r]
    ref = statistics.median(ok) if ok else None
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
        if step in ("m-elo", "am-elo", "choix", "evalica"):
            print(json.dumps(child(step, Path(arg).parent, arg)))
        else:
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
