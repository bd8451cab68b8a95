"""Benchmark ``annotate analyze`` at the EIP paper's scale: 30 models x 35,550 questions.

Run::

    .venv/bin/python benchmarks/bench_analyze.py              # prints and saves the table
    .venv/bin/python benchmarks/bench_analyze.py --boot 200   # bootstrap resamples (default 200)

A synthetic matrix is drawn from a Rasch model (30 abilities evenly spaced in
[-1.5, 2], question difficulties N(0, 1.3)), split into the paper's six datasets
with its sizes (HellaSwag 10,042, MMLU-Pro 12,032, MATH 5,000, GPQA 646, GSM8k 1,319,
BBH 6,511 = 35,550), and 30 models in 6 families of 5 with sizes 0.5-72 B. The files
(wide responses.csv, questions.csv, models.csv) are written to a temporary folder and
``annotate analyze FOLDER --json --no-plots`` runs in a subprocess, as a user would run
it, with every analysis at the paper's trial counts (Table 5: k = 1, 5, 10, 15 x 50
trials; Table 9: 30 leave-one-out + 10 random; Table 10: 6 datasets; Tables 14 and 8;
Table 18: 4 super models; Table 20: 3 rates x 20 samples; bootstrap ``--boot``).

The table gives each analysis's time (from the JSON) and the whole command's wall
time. The subprocess runs with the BLAS thread variables removed from its environment:
the command itself limits BLAS to one thread (``annotate.services.analyze.analyze``,
``threads=1``), so this is what a user gets. The 1-minute load average is printed
before and after.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "bench_analyze.txt"
DATASETS = {
    "HellaSwag": 10042,
    "MMLU-Pro": 12032,
    "MATH": 5000,
    "GPQA": 646,
    "GSM8k": 1319,
    "BBH": 6511,
}
FAMILIES = ("Qwen", "Llama", "Yi", "Phi", "gemma", "Mistral")


def write_inputs(folder: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n_q, n_m = sum(DATASETS.values()), 30
    theta = np.linspace(-1.5, 2.0, n_m)
    b = rng.normal(0.0, 1.3, n_q)
    A = (rng.random((n_q, n_m)) < 1.0 / (1.0 + np.exp(b[:, None] - theta))).astype(np.uint8)
    models = [f"{FAMILIES[j % 6]}-{j}" for j in range(n_m)]
    sizes = np.round(np.geomspace(0.5, 72, n_m), 1)
    with (folder / "responses.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", *models])
        for i in range(n_q):
            w.writerow([f"q{i}", *A[i].tolist()])
    with (folder / "questions.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "dataset"])
        i = 0
        for name, n in DATASETS.items():
            for _ in range(n):
                w.writerow([f"q{i}", name])
                i += 1
    with (folder / "models.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "family", "params_b", "open_weight"])
        for j, m in enumerate(models):
            w.writerow([m, FAMILIES[j % 6], sizes[j], "true" if j % 2 else "false"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--no-save", action="store_true", help="do not write the results file")
    args = ap.parse_args()
    lines: list[str] = []

    def out(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    cmd_line = f".venv/bin/python benchmarks/bench_analyze.py --boot {args.boot}"
    out(f"command: {cmd_line}")
    out(f"date: {datetime.now(UTC).isoformat(timespec='seconds')}")
    out(f"cores: {os.cpu_count()}; load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bench"
        folder.mkdir()
        t0 = time.perf_counter()
        write_inputs(folder)
        out(f"inputs written in {time.perf_counter() - t0:.1f} s (30 models x 35,550 questions)")
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        }
        cmd = [
            sys.executable,
            "-m",
            "annotate",
            "analyze",
            str(folder),
            "--json",
            "--no-plots",
            "--boot",
            str(args.boot),
            "--out",
            str(Path(tmp) / "out"),
        ]
        t0 = time.perf_counter()
        r0 = os.times()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.perf_counter() - t0
        r1 = os.times()
        if proc.returncode != 0:
            out(f"annotate analyze failed ({proc.returncode}): {proc.stderr.strip()}")
            return 1
        doc = json.loads(proc.stdout)
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    out()
    out(f"{'analysis':<16} {'paper':<26} {'seconds':>8}  first row")
    total = 0.0
    for key, sec in doc["sections"].items():
        total += sec["seconds"]
        first = sec["rows"][0] if sec["rows"] else {}
        show = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in list(first.items())[:6]
            if not k.endswith("_reason")
        )
        out(f"{key:<16} {sec['paper']:<26} {sec['seconds']:>8.2f}  {show}")
    out(f"{'all analyses':<43} {total:>8.2f}")
    out(f"{'whole command (read, fit, write CSVs)':<43} {wall:>8.2f}  (CPU {cpu:.1f} s)")
    out(f"load average after: {os.getloadavg()}")
    out(f"target: under 60 s -> {'met' if wall < 60 else 'NOT met'}")
    if not args.no_save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"saved {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
