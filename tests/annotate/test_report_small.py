"""The report on a small pilot (issue 12): p-values, reasons once, Methods, References, LaTeX."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr
from sqlalchemy import Engine

from annotate.cli import main
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.report import _rank_correlation, human_alignment_report
from annotate.services.report_files import tex_escape
from annotate.services.report_view import p_text
from tests.annotate.test_report import cast

QUESTIONS = [f"q{i}" for i in range(1, 9)]
# 12 pairs over 8 questions; the hidden order is q1 (easiest) .. q8 (hardest)
PAIRS = {
    f"p{k}": pair
    for k, pair in enumerate(
        [
            ("q1", "q2"),
            ("q3", "q2"),
            ("q3", "q4"),
            ("q5", "q4"),
            ("q5", "q6"),
            ("q7", "q6"),
            ("q7", "q8"),
            ("q1", "q5"),
            ("q8", "q2"),
            ("q3", "q7"),
            ("q6", "q4"),
            ("q1", "q8"),
        ],
        start=1,
    )
}
# Scores per question (q1 .. q8) of each model, and its pool. "oracle-7b" fails only q8,
# which no other model of its pool solves: EIP cannot run on the "small" pool (the
# oracle fails none of the questions it keeps, F(m) = 0), but runs on "large" and on all.
MODELS = {
    "oracle-7b": ("small", "11111110"),
    "tiny-1b": ("small", "11000000"),
    "mini-3b": ("small", "11110000"),
    "big-70b": ("large", "11111101"),
    "huge-400b": ("large", "11101010"),
    "mid-13b": ("large", "10110000"),
}
ODD_COLUMN = "p_50% & #1 {x}~^\\$ \x1b[31m"
"""A --difficulty column named with every LaTeX special character and an escape sequence."""


def harder(a: str, b: str) -> str:
    return "first" if int(a[1:]) > int(b[1:]) else "second"


def make_pilot(root: Path) -> Path:
    folder = root / "pilot"
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        'name = "pilot"\nkind = "difficulty"\ntitle = "Pilot & co: 100% #1"\n', encoding="utf-8"
    )
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps({"id": q, "subject": "math", "text": q}) + "\n" for q in QUESTIONS),
        encoding="utf-8",
    )
    rows = ["pair_id,first,second"] + [f"{k},{a},{b}" for k, (a, b) in PAIRS.items()]
    (folder / "pairs.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    lines = ["question_id,model,score"]
    for i, q in enumerate(QUESTIONS, start=1):
        for m, (_, scores) in MODELS.items():
            lines.append(f"{q},{m},{scores[i - 1]}")
    (folder / "responses.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    meta = ["model,pool"] + [f"{m},{pool}" for m, (pool, _) in MODELS.items()]
    (folder / "models.csv").write_text("\n".join(meta) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def pilot(tmp_path: Path) -> tuple[Engine, Path]:
    db = tmp_path / "v.db"
    engine = open_store(db)
    import_paths(engine, [make_pilot(tmp_path / "studies")])
    flip = {"ann": {"p3"}, "bo": {"p5", "p9"}, "cy": {"p10"}}
    votes = {
        a: {
            k: ("skip" if (a, k) == ("cy", "p2") else harder(x, y))
            if k not in wrong
            else ("second" if harder(x, y) == "first" else "first")
            for k, (x, y) in PAIRS.items()
        }
        for a, wrong in flip.items()
    }
    cast(engine, "pilot", votes)
    return engine, db


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_spearman_p_for_three_questions_is_exact() -> None:
    # scipy's t approximation gives p = 0 for rho = 1 with n = 3
    assert spearmanr([1, 2, 3], [1, 2, 3]).pvalue == 0.0
    x = np.array([1.0, 2.0, 3.0])
    for kind in ("spearman", "kendall"):
        c = _rank_correlation(x, x.copy(), kind)
        assert c.value == pytest.approx(1.0)
        assert c.p_value == pytest.approx(1 / 3)  # 2 of the 3! orderings are as extreme
    assert p_text(1 / 3) == "0.33"
    assert p_text(0.004) == "0.004"
    assert p_text(0.0004) == "< 0.001"
    assert p_text(None) == "—"


def test_exact_p_counts_every_ordering_with_ties() -> None:
    x = np.array([1.0, 2.0, 2.0, 4.0, 5.0, 7.0])
    y = np.array([2.0, 1.0, 3.0, 6.0, 4.0, 5.0])
    obs = abs(spearmanr(x, y).statistic)
    perms = [abs(spearmanr(x, y[list(p)]).statistic) for p in itertools.permutations(range(6))]
    want = np.mean([r >= obs - 1e-9 for r in perms])
    assert _rank_correlation(x, y, "spearman").p_value == pytest.approx(want)


def test_small_pilot_report(
    pilot: tuple[Engine, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine, db = pilot
    diff = tmp_path / "odd.csv"
    diff.write_text(
        f'question_id,"{ODD_COLUMN}"\n' + "".join(f"{q},{i}\n" for i, q in enumerate(QUESTIONS)),
        encoding="utf-8",
    )
    out_dir = tmp_path / "out"
    args = ["--db", str(db), "report", "--study", "pilot", "--boot", "30", "--seed", "7"]
    out = run(capsys, *args, "--difficulty", str(diff), "--out", str(out_dir), "--latex")
    md = (out_dir / "report.md").read_text(encoding="utf-8")
    for text in (out, md):
        assert "0.0000" not in text
        assert "model 0" not in text
    # the p columns: exact, with two decimals or "< 0.001"
    rep = human_alignment_report(engine, "pilot", n_boot=0)
    corr = [c for c in rep.human_scale.correlations if c.spearman_p is not None]
    assert corr
    assert all(c.n <= 8 for c in corr)
    assert "exact (all n! orderings" in out
    # EIP fails on the small pool: the reason, naming the model, is said once, in the note
    small = next(s for s in rep.subgroups if s.pool == "small")
    assert small.consensus.value is None
    assert "'oracle-7b'" in (small.consensus.reason or "")
    for text in (out, md):
        assert text.count("fails none of the") == 1
        assert "oracle-7b" in text
    pools = out.split("Alignment by model pool (Figure 7)")[1].split("\n\n")[0]
    assert "undefined [1]" in pools
    # References: the EIP paper, cited once with the full reference
    assert "## References" in md
    refs = md.split("## References")[1]
    assert "EIP: Weighted Ranking of LLMs by Quantifying Question Difficulty" in refs
    assert "ICLR" in refs
    assert "Xingjian Hu" in refs
    assert md.count("Weighted Ranking of LLMs") == 1
    # Methods: what was computed, with which settings and versions
    methods = md.split("## Methods")[1].split("##")[0]
    import numpy
    import scipy

    for want in (
        "3 annotator(s) on 12 question pairs",
        "30 replicates",
        "seed 7",
        "margin 0",
        "EIP, Simple Rank, 1PL-IRT, 2PL-IRT, MIRT and",
        f"numpy {numpy.__version__}",
        f"scipy {scipy.__version__}",
        "annotate ",
        "two-way, pairs and annotators resampled together",
    ):
        assert want in methods, want
    # LaTeX: booktabs tabulars of the alignment and agreement tables, escaped cells
    tex = (out_dir / "report.tex").read_text(encoding="utf-8")
    assert tex.startswith("%")
    assert "\\documentclass{article}" in tex
    assert "\\usepackage{booktabs}" in tex
    assert tex.count("\\begin{tabular}") == 2 == tex.count("\\end{tabular}")
    assert tex.count("\\begin{table}") == tex.count("\\end{table}") == 2
    assert tex.count("\\toprule") == tex.count("\\midrule") == tex.count("\\bottomrule") == 2
    assert tex.rstrip().endswith("\\end{document}")
    assert "\\label{tab:alignment}" in tex
    assert "\\label{tab:agreement}" in tex
    assert "Krippendorff" in tex
    escaped = tex_escape(ODD_COLUMN)
    assert escaped == (
        "p\\_50\\% \\& \\#1 \\{x\\}\\textasciitilde{}\\textasciicircum{}\\textbackslash{}\\$ "
        "\\textasciicircum{}[[31m"
    )
    assert escaped in tex
    assert "\x1b" not in tex
    # every table row has as many cells as its column spec, and braces balance
    for spec, body in re.findall(r"\\begin\{tabular\}\{(\w+)\}(.*?)\\end\{tabular\}", tex, re.S):
        rows = [r for r in body.split("\\\\") if "&" in r]
        assert rows
        for r in rows:
            assert len(re.split(r"(?<!\\)&", r)) == len(spec), r
    depth = 0
    for ch in re.sub(r"\\[{}]", "", tex):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    # outside the structure, no unescaped special character: text is literal
    body = tex.split("\\begin{document}")[1].replace("\\resizebox{\\textwidth}{!}{%", "")
    body = body.replace("$\\langle$", "").replace("$\\rangle$", "")
    assert not re.search(r"(?<!\\)[%#$_~^]", body)
    rows = [line for line in body.splitlines() if line.endswith("\\\\")]
    assert all(not re.search(r"(?<!\\)&", line.replace(" & ", "")) for line in rows)


def test_no_votes_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "v.db"
    import_paths(open_store(db), [make_pilot(tmp_path / "studies")])
    out_dir = tmp_path / "out"
    args = ["--db", str(db), "report", "--study", "pilot", "--boot", "10", "--latex"]
    out = run(capsys, *args, "--out", str(out_dir))
    md = (out_dir / "report.md").read_text(encoding="utf-8")
    for text in (out, md):
        assert text.count("undefined: there are no votes") == 1
        assert "Alignment with human judgement (Table 2)" not in text
    assert max(len(line) for line in out.splitlines() if "|" not in line) < 400
    tex = (out_dir / "report.tex").read_text(encoding="utf-8")
    assert "\\begin{tabular}" not in tex
    assert "there are no votes" in tex
    assert math.isfinite(len(tex))


def test_exact_kendall_p_with_tied_infinite_difficulties() -> None:
    # EIP gives +inf to questions no model solves; two of them are a tie, not NaN (inf - inf
    # made every ordering's statistic NaN and the p-value 0). Reference: the share of the
    # 6! orderings whose |tau-b| (scipy.stats.kendalltau) is at least the observed one,
    # with the infinities replaced by one large finite value (the same order and ties).
    from annotate.services.report import _exact_p

    x = np.array([np.inf, np.inf, 1.0, 2.0, 2.0, -np.inf])
    y = np.array([5.0, 4.0, 1.0, 3.0, 2.0, 0.0])
    finite = np.where(np.isinf(x), np.sign(x) * 1e9, x)
    obs = abs(kendalltau(finite, y).statistic)
    perms = [
        abs(kendalltau(finite, y[list(p)]).statistic) for p in itertools.permutations(range(6))
    ]
    want = np.mean([t >= obs - 1e-9 for t in perms])
    assert 0.0 < want < 1.0
    assert _exact_p(x, y, "kendall") == pytest.approx(want)
    assert _exact_p(x, y, "kendall") == _exact_p(finite, y, "kendall")
