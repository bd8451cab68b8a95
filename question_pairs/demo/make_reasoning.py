"""Generate the demo's structured answers for ReasonerRank (``reasoning/outputs.jsonl``).

Nothing here was answered by a real model. Sixty original questions in three
subsets are generated from templates (20 arithmetic word problems with numeric
answers, 20 unit conversions with four options, 20 word puzzles with short text
answers), and each of the twelve fictional models of the difficulty demo
"answers" every question in the paper's fixed three-step format (App. A.1.3):

- it is right with probability ``1 / (1 + exp(-(theta - b_q)))`` (its ability
  ``theta`` from ``make_responses.py``, a difficulty ``b_q`` per question);
- the ``skyline`` family (Wren-1B, Puffin-2B, Heron-3B, Kestrel-7B, Condor-70B)
  shares a systematic mistake: on "trap" questions (every third one) all but its
  largest model give the same wrong answer when wrong, so a plain majority vote
  can side with them;
- its reasoning quality ``rho`` (rising with ability, with some noise) is the
  chance that each step and evidence item is about the question rather than a
  generic filler sentence, and its format discipline is the chance of writing
  each required part (small models drop parts).

The output is deterministic (fixed seed). Regenerate with::

    python question_pairs/demo/make_reasoning.py

and rank with ``annotate rank reasonerrank question_pairs/demo/reasoning/outputs.jsonl``.
The script prints each model's realised accuracy (the evaluation target).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "reasoning"
SEED = 20261123

# model -> (family, ability theta, reasoning quality rho, format discipline)
MODELS: dict[str, tuple[str, float, float, float]] = {
    "Stoat-Mini": ("burrow", -1.9, 0.35, 0.80),
    "Wren-1B": ("skyline", -1.6, 0.40, 0.85),
    "Puffin-2B": ("skyline", -1.1, 0.45, 0.90),
    "Heron-3B": ("skyline", -0.7, 0.50, 0.92),
    "Kestrel-7B": ("skyline", -0.2, 0.55, 0.95),
    "Lynx-8B": ("ridge", 0.1, 0.62, 0.97),
    "Marten-13B": ("burrow", 0.4, 0.68, 0.98),
    "Otter-14B": ("burrow", 0.6, 0.72, 0.98),
    "Ibex-22B": ("ridge", 0.9, 0.78, 0.99),
    "Badger-34B": ("burrow", 1.2, 0.82, 1.00),
    "Condor-70B": ("skyline", 1.7, 0.88, 1.00),
    "Walrus-120B": ("ridge", 2.1, 0.92, 1.00),
}
SHARED_MISTAKE_EXCEPT = {"Condor-70B"}
"""The skyline model that does not share the family's systematic mistake."""

FILLER = [
    "Let me think about this carefully before answering.",
    "Questions like this one are common in exams.",
    "It is important to read every question twice.",
    "Many people find this kind of problem tricky at first.",
    "A careful approach usually gives the right result.",
    "There are several ways one could look at this.",
    "Experience helps with problems of this type.",
    "One should always double-check an answer.",
]

UNITS = [  # (from unit, to unit, factor, noun)
    ("metres", "centimetres", 100, "length"),
    ("kilograms", "grams", 1000, "mass"),
    ("litres", "millilitres", 1000, "volume"),
    ("hours", "minutes", 60, "time"),
    ("kilometres", "metres", 1000, "distance"),
]
WORDS = [
    "stone",
    "garden",
    "pencil",
    "river",
    "lantern",
    "meadow",
    "harbor",
    "velvet",
    "candle",
    "timber",
]


def arithmetic(rng: np.random.Generator, i: int) -> dict[str, object]:
    a, b = int(rng.integers(3, 19)), int(rng.integers(4, 26))
    c = int(rng.integers(2, 9))
    gold = a * b + c
    text = (
        f"A baker packs {b} rolls into each of {a} boxes and has {c} rolls left over. "
        "How many rolls did the baker make?"
    )
    steps = [
        f"Each of the {a} boxes holds {b} rolls, so the boxes hold {a} x {b} rolls.",
        f"{a} x {b} rolls is {a * b} rolls packed in the boxes.",
        f"Adding the {c} rolls left over to the {a * b} packed rolls gives {gold} rolls.",
    ]
    evidence = [
        f"The baker fills {a} boxes with {b} rolls each.",
        f"{a} boxes times {b} rolls per box equals {a * b} rolls.",
        f"{c} rolls were left over after packing the boxes.",
    ]
    trap = str(a + b + c)  # the shared mistake: adding instead of multiplying
    near = str(gold + int(rng.choice([-10, -1, 1, 10])))
    return {
        "text": text,
        "gold": str(gold),
        "steps": steps,
        "evidence": evidence,
        "trap": trap,
        "wrong": near,
        "choices": None,
        "conclusion": "The baker made {answer} rolls in total.",
    }


def conversion(rng: np.random.Generator, i: int) -> dict[str, object]:
    src, dst, factor, noun = UNITS[i % len(UNITS)]
    x = float(rng.choice([1.5, 2.5, 3.2, 4.75, 0.6, 7.25, 12.5, 0.35]))
    right = x * factor
    trap_value = x * factor / 10 if factor != 60 else x * 100
    values = [right, trap_value, right * 10, right + factor]
    opts = [values[j] for j in rng.permutation(4)]
    fmt = [f"{v:g} {dst}" for v in opts]
    letter = "ABCD"[opts.index(right)]
    trap_letter = "ABCD"[opts.index(trap_value)]
    wrong_letter = "ABCD"[(opts.index(right) + 2) % 4]
    steps = [
        f"To convert {noun} from {src} to {dst}, multiply by {factor}.",
        f"{x:g} {src} multiplied by {factor} gives {right:g} {dst}.",
        f"So {x:g} {src} of {noun} equal {right:g} {dst}, which is option {letter}.",
    ]
    evidence = [
        f"One of the {src} equals {factor} {dst}.",
        f"{x:g} times {factor} is {right:g}.",
        f"Option {letter} reads {right:g} {dst}.",
    ]
    return {
        "text": f"How many {dst} are in {x:g} {src}?",
        "gold": letter,
        "choices": fmt,
        "steps": steps,
        "evidence": evidence,
        "trap": trap_letter,
        "wrong": wrong_letter,
        "conclusion": f"{x:g} {src} is option {{answer}}.",
    }


def puzzle(rng: np.random.Generator, i: int) -> dict[str, object]:
    w = WORDS[i % len(WORDS)]
    if i % 2 == 0:
        gold = w[::-1]
        text = f"What is the word '{w}' spelled backwards?"
        steps = [
            f"The word '{w}' has the letters {', '.join(w)}.",
            f"Reading the letters of '{w}' from last to first gives {', '.join(w[::-1])}.",
            f"Joining the reversed letters of '{w}' gives '{gold}'.",
        ]
        evidence = [
            f"'{w}' is spelled {'-'.join(w)}.",
            f"Reversed, '{w}' is spelled {'-'.join(w[::-1])}.",
            f"The last letter of '{w}' is '{w[-1]}'.",
        ]
        trap = gold[1:] + gold[0]
        wrong = w[-1] + w[1:-1] + w[0]
    else:
        gold = str(sum(ch in "aeiou" for ch in w))
        text = f"How many vowels (a, e, i, o, u) are in the word '{w}'?"
        vowels = [ch for ch in w if ch in "aeiou"]
        steps = [
            f"The letters of '{w}' are {', '.join(w)}.",
            f"The vowels among the letters of '{w}' are {', '.join(vowels)}.",
            f"Counting the vowels {', '.join(vowels)} of '{w}' gives {gold}.",
        ]
        evidence = [
            f"'{w}' is spelled {'-'.join(w)}.",
            "The vowels are a, e, i, o and u.",
            f"'{w}' contains the vowels {', '.join(vowels)}.",
        ]
        trap = str(int(gold) + 1)
        wrong = str(len(w) - int(gold))
    return {
        "text": text,
        "gold": gold,
        "choices": None,
        "steps": steps,
        "evidence": evidence,
        "trap": trap,
        "wrong": wrong,
        "conclusion": "The answer is {answer}.",
    }


def response(
    rng: np.random.Generator,
    q: dict[str, object],
    answer: str,
    right: bool,
    rho: float,
    discipline: float,
) -> str:
    steps = list(q["steps"])  # type: ignore[call-overload]
    evidence = list(q["evidence"])  # type: ignore[call-overload]
    if not right:  # a wrong answer comes with a last step that does not follow
        steps[-1] = f"So the result must be {answer}."
    steps = [s if rng.random() < rho else str(rng.choice(FILLER)) for s in steps]
    evidence = [e if rng.random() < rho else str(rng.choice(FILLER)) for e in evidence]
    keep = lambda: rng.random() < discipline  # noqa: E731
    answered = keep()
    lines = [f"Answer: {answer}" if answered else "Answer:", "", "Reasoning:", ""]
    for i, s in enumerate(steps, start=1):
        if i == 1 or keep():
            lines.append(f"Step {i}: {s}")
    lines += ["", "Supporting Evidence:", ""]
    lines += [f"- {e}" for e in evidence if keep()]
    lines += ["", "Conclusion:", ""]
    if keep():
        lines.append("- " + str(q["conclusion"]).format(answer=answer))
    return "\n".join(lines) + "\n", answered


def main() -> None:
    rng = np.random.default_rng(SEED)
    questions: list[tuple[str, str, dict[str, object], float]] = []
    for subset, make in (
        ("arithmetic", arithmetic),
        ("conversions", conversion),
        ("word-puzzles", puzzle),
    ):
        for i in range(20):
            q = make(rng, i)
            b = float(np.linspace(-1.5, 1.5, 20)[i]) + float(rng.normal(0, 0.3))
            questions.append((f"{subset}-{i + 1:02d}", subset, q, b))
    rows = []
    correct: dict[str, list[bool]] = {m: [] for m in MODELS}
    for qid, subset, q, b in questions:
        trap_q = int(qid[-2:]) % 3 == 0
        for model, (family, theta, rho, discipline) in MODELS.items():
            right = bool(rng.random() < 1.0 / (1.0 + math.exp(-(theta - b))))
            shared = family == "skyline" and model not in SHARED_MISTAKE_EXCEPT and trap_q
            if shared:
                right = bool(rng.random() < 0.15)
            answer = str(q["gold"]) if right else str(q["trap"] if shared else q["wrong"])
            text, answered = response(rng, q, answer, right, rho, discipline)
            correct[model].append(answered and answer == q["gold"])  # an unstated answer is wrong
            rec: dict[str, object] = {
                "question_id": qid,
                "subset": subset,
                "model": model,
                "text": text,
                "gold": q["gold"],
            }
            if q["choices"]:
                rec["choices"] = q["choices"]
            rows.append(rec)
    HERE.mkdir(exist_ok=True)
    with (HERE / "outputs.jsonl").open("w", encoding="utf-8", newline="\n") as f:
        for rec in rows:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} responses: {len(MODELS)} models x {len(questions)} questions")
    for model in sorted(MODELS, key=lambda m: -np.mean(correct[m])):
        print(f"  {model:<12} accuracy {np.mean(correct[model]):.3f}")


if __name__ == "__main__":
    main()
