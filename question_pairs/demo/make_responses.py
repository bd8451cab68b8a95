"""Generate the demo difficulty study's response matrix and model list.

The demo questions in ``difficulty/questions.jsonl`` were written by hand. No
real model answered them: ``responses.csv`` is simulated from a two-parameter
logistic (2PL) item response model,

    P(model m answers question q correctly) = 1 / (1 + exp(-a_q * (theta_m - b_q)))

with the difficulty ``b_q`` and discrimination ``a_q`` of each question set by
judgement below, and an ability ``theta_m`` for each of twelve fictional
models. Questions with two parts get partial credit: two independent draws,
averaged (0, 0.5 or 1). A few cells are left out on purpose, as if the model
had not answered, so that the demo exercises missing data.

The output is deterministic (fixed seed). Regenerate with::

    python question_pairs/demo/make_responses.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "difficulty"
SEED = 20261122

# question id -> (difficulty b on the logit scale, discrimination a)
ITEMS: dict[str, tuple[float, float]] = {
    "arith-01": (-3.0, 1.2),
    "arith-02": (-2.5, 1.2),
    "arith-03": (-1.5, 1.2),
    "arith-04": (-1.0, 1.0),
    "arith-05": (-0.6, 1.0),
    "arith-06": (-0.3, 0.7),  # a trap more than a calculation
    "arith-07": (0.0, 1.2),
    "arith-08": (1.0, 1.4),
    "arith-09": (1.1, 1.5),
    "arith-10": (1.5, 1.3),
    "arith-11": (1.9, 1.5),
    "arith-12": (2.5, 1.8),
    "chem-01": (-3.0, 1.0),
    "chem-02": (-2.8, 1.0),
    "chem-03": (-2.0, 1.0),
    "chem-04": (-1.6, 1.0),
    "chem-05": (-0.8, 1.2),
    "chem-06": (-0.2, 1.2),
    "chem-07": (0.0, 1.3),
    "chem-08": (0.2, 0.8),
    "chem-09": (0.4, 1.3),
    "chem-10": (1.0, 1.4),
    "chem-11": (1.5, 1.5),
    "chem-12": (2.3, 1.7),
    "logic-01": (-3.0, 1.0),
    "logic-02": (-2.5, 0.9),
    "logic-03": (-2.2, 1.0),
    "logic-04": (-1.5, 1.1),
    "logic-05": (-0.8, 1.2),
    "logic-06": (-0.4, 0.7),  # the intuitive answer is wrong
    "logic-07": (0.5, 1.2),
    "logic-08": (0.8, 1.3),
    "logic-09": (1.0, 1.2),
    "logic-10": (1.4, 1.6),
    "logic-11": (1.8, 1.5),
    "logic-12": (2.3, 1.4),
    "prog-01": (-2.8, 1.0),
    "prog-02": (-2.5, 1.0),
    "prog-03": (-1.4, 1.1),
    "prog-04": (-0.8, 1.1),
    "prog-05": (-0.1, 1.2),
    "prog-06": (0.2, 1.0),
    "prog-07": (0.8, 1.3),
    "prog-08": (1.0, 1.4),
    "prog-09": (1.4, 1.4),
    "prog-10": (1.5, 1.3),
    "prog-11": (1.9, 1.5),
    "prog-12": (2.1, 1.6),
}

# Questions with two parts: scored 0, 0.5 or 1.
PARTIAL = {"chem-10", "chem-11", "chem-12", "prog-08"}

# model -> (family, parameters in billions, ability theta); all names are invented.
MODELS: dict[str, tuple[str, float, float]] = {
    "Stoat-Mini": ("burrow", 0.8, -1.9),
    "Wren-1B": ("skyline", 1.1, -1.6),
    "Puffin-2B": ("skyline", 2.4, -1.1),
    "Heron-3B": ("skyline", 3.2, -0.7),
    "Kestrel-7B": ("skyline", 7.0, -0.2),
    "Lynx-8B": ("ridge", 8.0, 0.1),
    "Marten-13B": ("burrow", 13.0, 0.4),
    "Otter-14B": ("burrow", 14.0, 0.6),
    "Ibex-22B": ("ridge", 22.0, 0.9),
    "Badger-34B": ("burrow", 34.0, 1.2),
    "Condor-70B": ("skyline", 70.0, 1.7),
    "Walrus-120B": ("ridge", 120.0, 2.1),
}

# (question, model) cells left empty: the model gave no answer.
MISSING = {
    ("arith-10", "Wren-1B"),
    ("chem-12", "Stoat-Mini"),
    ("logic-10", "Puffin-2B"),
    ("prog-08", "Heron-3B"),
}


def pool(params_b: float) -> str:
    """Size pool for subgroup analysis."""
    if params_b < 5:
        return "small"
    if params_b <= 20:
        return "medium"
    return "large"


def fmt(x: float) -> str:
    return f"{x:g}"


def main() -> None:
    ids = [json.loads(line)["id"] for line in (HERE / "questions.jsonl").open(encoding="utf-8")]
    if sorted(ids) != sorted(ITEMS):
        raise SystemExit("ITEMS does not match the ids in questions.jsonl")
    rng = np.random.default_rng(SEED)
    rows: list[tuple[str, str, str]] = []
    for qid in ids:
        b, a = ITEMS[qid]
        for model, (_family, _params, theta) in MODELS.items():
            p = 1.0 / (1.0 + np.exp(-a * (theta - b)))
            draws = rng.random(2) < p  # always draw two, so the stream never shifts
            score = float(draws.mean()) if qid in PARTIAL else float(draws[0])
            if (qid, model) not in MISSING:
                rows.append((qid, model, fmt(score)))
    with (HERE / "responses.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["question_id", "model", "score"])
        w.writerows(rows)
    with (HERE / "models.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["model", "family", "params_b", "pool"])
        for model, (family, params, _theta) in MODELS.items():
            w.writerow([model, family, fmt(params), pool(params)])
    print(f"wrote {len(rows)} scores for {len(ids)} questions and {len(MODELS)} models")


if __name__ == "__main__":
    main()
