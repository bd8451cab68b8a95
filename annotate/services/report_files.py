"""The human-alignment report as files: ``report.md``, CSVs and PNG plots.

:func:`write_report` writes a :class:`annotate.services.report_model.HumanAlignmentReport`
under a folder. The Markdown uses the same text tables as the screen
(:mod:`annotate.services.report_view`), escaped so that study text stays
literal; the plots come from :mod:`annotate.services.plots`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from annotate.names import one_line
from annotate.services.json_ready import (
    float_matrix,
    float_rows_json,
    kept_result,
    kept_scope,
    matrix_lines,
    symmetric_texts,
    warm_matrix_texts,
)
from annotate.services.paths import inside, output_folder
from annotate.services.report_model import (
    RESAMPLE_LABELS,
    Agreement,
    ArenaReport,
    HumanAlignmentReport,
)
from annotate.services.report_view import EXACT_P_MAX_N, arena_view, pairwise_rows, printed_view
from annotate.views import ReportTable
from ranking.alignment import Estimate, Interval


@dataclass(frozen=True)
class WrittenReport:
    """Files written by :func:`write_report`."""

    folder: Path
    files: tuple[Path, ...]
    notes: tuple[str, ...]
    plot_seconds: float


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|~"})


def md_escape(text: str) -> str:
    """``text`` as literal Markdown table-cell text (no markup, links or HTML, one line).

    Control characters and escape sequences become visible placeholders
    (:func:`annotate.names.one_line`), so a report viewed with ``cat`` cannot
    restyle the terminal.
    """
    return one_line(" ".join(text.splitlines())).translate(_MD_SPECIAL)


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """Write a report CSV whose every cell is :func:`annotate.names.one_line` text.

    Report tables are read by people (``cat``, a spreadsheet): names and keys
    holding control characters or escape sequences are written with visible
    placeholders. Vote exports are data and are written exactly
    (:mod:`annotate.services.exporting`).
    """
    import csv

    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([one_line(c) for c in header])
        for row in rows:
            cells = _cells(row)
            line = _plain_line(cells)
            if line is None:  # a cell csv quotes (or not text): the writer writes the row
                w.writerow(cells)
            else:
                fh.write(line)
    return path


def _plain_line(cells: Sequence[object]) -> str | None:
    """The line ``csv.writer`` (excel dialect, minimal quoting) writes for ``cells`` when
    no cell needs quoting: text cells without a comma, a quote, CR or LF, and not one
    empty cell alone (written ``""``); None otherwise. Joined in C passes, where the
    writer checks each of a million cells (the pairwise kappa table) one by one."""
    try:
        joined = "".join(cells)  # type: ignore[arg-type]
    except TypeError:  # a cell that is not text
        return None
    if "," in joined or '"' in joined or "\r" in joined or "\n" in joined:
        return None
    if len(cells) == 1 and not joined:
        return None
    return ",".join(cells) + "\r\n"  # type: ignore[arg-type]


def _cells(row: Sequence[object]) -> Sequence[object]:
    """:func:`_cell` of every cell of ``row``; a row of printable ASCII text is returned as
    it is after one check of its joined text (each cell then passes :func:`_cell`'s test)."""
    if not isinstance(row, list | tuple):
        row = list(row)  # read once: a one-shot iterable would be empty after the join
    try:
        joined = "".join(row)  # type: ignore[arg-type]
    except TypeError:  # a cell that is not text
        return [_cell(c) for c in row]
    if joined.isascii() and joined.isprintable():
        return row
    return [_cell(c) for c in row]


def _cell(c: object) -> str:
    """:func:`one_line` of ``c``; printable ASCII text is returned as it is (one_line leaves
    it unchanged), which saves a translation per cell of the large tables (the pairwise
    kappa of 1,000 annotators has a million)."""
    if type(c) is str and c.isascii() and c.isprintable():
        return c
    return one_line(c)


_MD_SPECIAL_RE = re.compile("[" + re.escape("\\`*_[]<>#~") + "]")
"""The characters :func:`md_escape` escapes, but ``|``."""

_MD_SPECIAL_BUT_PIPE = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#~"})


def _md_plain(joined: str, cells: int) -> bool:
    """Whether :func:`md_escape` of each of ``cells`` cells is the cell with its special
    characters escaped and nothing else, given their text joined by ``" | "``: printable
    (one_line changes only characters that are not: controls, line and paragraph
    separators, bidi marks, surrogates, and splitlines' line ends), with no ``|`` but the
    separators'. The joined text, escaped but for ``|``, is then the escaped cells joined."""
    return joined.isprintable() and joined.count("|") == cells - 1


class _Escaped(dict[str, str]):
    """:func:`md_escape` with memory: report tables repeat few distinct cell texts
    (numbers with two or three decimals), so each is escaped once."""

    def __missing__(self, text: str) -> str:
        out = self[text] = md_escape(text)
        return out


def _md_table(t: ReportTable) -> list[str]:
    lines = [f"### {md_escape(t.title)}", ""]
    if not t.rows:
        return [*lines, "(empty)", ""]
    lines.append("| " + " | ".join(md_escape(c) for c in t.columns) + " |")
    lines.append("|" + "|".join("---" for _ in t.columns) + "|")
    rows = t.rows
    lines += kept_result("md rows " + t.key, rows, lambda: _md_rows(rows))
    if t.note:
        lines += ["", f"*{md_escape(t.note)}*"]
    return [*lines, ""]


def _md_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    """The Markdown lines of a table's rows (:func:`_md_table`)."""
    esc = _Escaped()
    lines = []
    for row in rows:
        joined = " | ".join(row)
        if _md_plain(joined, len(row)):
            if _MD_SPECIAL_RE.search(joined) is not None:  # "[0.1, 0.2]": escaped at once
                joined = joined.translate(_MD_SPECIAL_BUT_PIPE)
        else:
            joined = " | ".join([esc[c] for c in row])
        lines.append("| " + joined + " |")
    return lines


def prepare_pairwise(g: Agreement) -> None:
    """Make ahead what writing the report converts of the pairwise kappa matrix (its floats,
    the CSV's texts, the Markdown table's texts and lines: some 0.3 s at 1,000 annotators),
    kept for the caller's :func:`annotate.services.json_ready.kept_texts` scope, which
    this runs in (nothing is kept outside one); the files are the same, written later by
    :func:`write_report` with what is kept. The steps of :func:`pairwise_steps`, in order."""
    for step in pairwise_steps(lambda: g):
        step()


def pairwise_steps(agreement: Callable[[], Agreement]) -> tuple[Callable[[], None], ...]:
    """:func:`prepare_pairwise` in three steps, for the agreement ``agreement()`` gives
    (called by each step): the CSV's texts (pyarrow), the Markdown table's texts, then its
    lines, which use the texts the second step kept (run after it is done). The report
    runs them as stages of threads that would otherwise wait
    (:func:`annotate.services.report.human_alignment_report`); the first two may run
    side by side, each in the caller's context (a copy of it per thread)."""

    def texts() -> None:
        warm_matrix_texts(agreement().pairwise_kappa)  # pairwise_kappa.csv's and --json's

    def rows() -> None:
        pairwise_rows(agreement())

    def lines() -> None:
        table = pairwise_rows(agreement())
        kept_result("md rows pairwise", table, lambda: _md_rows(table))

    return texts, rows, lines


EIP_PAPER = (
    "Xingjian Hu, Ziqian Zhang, Yue Huang, Kai Zhang, Ruoxi Chen, Yixin Liu, Qingsong Wen, "
    "Kaidi Xu, Xiangliang Zhang, Neil Zhenqiang Gong and Lichao Sun. EIP: Weighted Ranking "
    "of LLMs by Quantifying Question Difficulty. International Conference on Learning "
    "Representations (ICLR), 2026. Code: https://github.com/Leozz04/EIP"
)
"""The paper whose Table 2, eq. 9 and Figure 7 the report reproduces (reference [1])."""

REFERENCES = (
    EIP_PAPER,
    "Zirui Liu, Jiatong Li, Yan Zhuang, Qi Liu, Shuanghong Shen, Jie Ouyang, Mingyue Cheng "
    "and Shijin Wang. am-ELO: A Stable Framework for Arena-based LLM Evaluation. "
    "International Conference on Machine Learning (ICML), 2025.",
    "Art B. Owen. The pigeonhole bootstrap. Annals of Applied Statistics 1(2), 386-411, 2007.",
)
"""The References section of report.md and report.tex, cited as [1], [2], [3]."""


def versions() -> str:
    """``annotate 0.1.0, numpy 2.4.6, scipy 1.17.1, Python 3.12.3``: what computed the report."""
    import platform
    from importlib import metadata

    import numpy
    import scipy

    import annotate

    try:
        own = metadata.version("annotate-eval")
    except metadata.PackageNotFoundError:
        own = annotate.__version__
    return (
        f"annotate {own}, numpy {numpy.__version__}, scipy {scipy.__version__}, "
        f"Python {platform.python_version()}"
    )


def methods_paragraph(r: HumanAlignmentReport) -> str:
    """A paragraph a lead can paste into a paper: what was computed, settings, versions."""
    nt = r.near_ties
    labels = [m.label for m in r.alignment]
    listed = ", ".join(labels[:-1]) + (" and " if len(labels) > 1 else "") + labels[-1]
    tie = (
        "only exact ties (margin 0) counted as near-ties"
        if nt.margin == 0
        else f"pairs whose majority margin |n1 - n2| / (n1 + n2) was at most {nt.margin:g} "
        "counted as near-ties"
    )
    if r.n_boot:
        boot = (
            f"Intervals are {100 * r.confidence:g}% percentile bootstrap intervals from "
            f"{r.n_boot} replicates per resampling scheme, resampling "
            f"{RESAMPLE_LABELS.get(r.resample, r.resample)} [3] (seed {r.seed})."
        )
    else:
        boot = "No bootstrap intervals were computed."
    pools = (
        f" Each estimator was recomputed on each of the {len({s.pool for s in r.subgroups})} "
        "model pools (Figure 7 of [1])."
        if r.subgroups
        else ""
    )
    return (
        f"We compared {len(labels)} question-difficulty estimator(s) ({listed}) with the "
        f"judgements of {len(r.annotators)} annotator(s) on {r.n_pairs} question pairs "
        f"({r.n_questions} questions; {r.n_votes} votes, {r.n_skips} of them skips), each "
        "judgement saying which question of a pair is harder, following the human-alignment "
        "protocol of Hu et al. [1] (sec. 3.3, App. H.3). For each estimator we computed the "
        "consensus alignment (eq. 9 of [1]: the share of pairs where the question the "
        "estimator rates harder is the one the majority of non-skipped votes chose; a tied "
        "prediction counts as a miss), Cohen's kappa against the consensus and the mean "
        f"individual alignment; {tie}, resolved by a reliability-weighted vote "
        f"({nt.rule} rule).{pools} Agreement among annotators: Fleiss' kappa, "
        "Krippendorff's alpha (nominal, skips as missing) and pairwise Cohen's kappa. A human "
        "difficulty scale was fitted with am-ELO [2] (Bradley-Terry with one discrimination "
        "per annotator) and compared with each estimator by Spearman's rho and Kendall's "
        f"tau-b (two-sided p-values, exact for {EXACT_P_MAX_N} or fewer questions). {boot} "
        f"Software: {versions()}."
    )


_TEX_SPECIAL = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        "<": r"\textless{}",
        ">": r"\textgreater{}",
        "|": r"\textbar{}",
        "—": "---",
        "–": "--",
        "⟨": r"$\langle$",
        "⟩": r"$\rangle$",
        **{chr(0x2400 + k): r"\textasciicircum{}" + chr(0x40 + k) for k in range(0x20)},
        "\u2421": r"\textasciicircum{}?",
    }
)


def tex_escape(text: object) -> str:
    """``text`` as literal LaTeX text on one line: control characters and escape sequences
    as visible placeholders (:func:`annotate.names.one_line`, then ``^[`` caret notation),
    every LaTeX special character escaped."""
    return one_line(" ".join(str(text).splitlines())).translate(_TEX_SPECIAL)


def _tex_table(t: ReportTable, label: str, caption: str) -> list[str]:
    spec = "l" + "r" * (len(t.columns) - 1)
    lines = [
        r"\begin{table}[ht]",
        r"\centering",
        rf"\caption{{{tex_escape(caption)}}}",
        rf"\label{{tab:{label}}}",
        r"\resizebox{\textwidth}{!}{%",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(tex_escape(c) for c in t.columns) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(tex_escape(c) for c in row) + r" \\" for row in t.rows]
    lines += [r"\bottomrule", r"\end{tabular}}"]
    if t.note:
        lines += [r"\par\smallskip", rf"{{\footnotesize {tex_escape(t.note)}\par}}"]
    return [*lines, r"\end{table}", ""]


def write_latex(r: HumanAlignmentReport, folder: Path) -> Path:
    """``report.tex``: the alignment and agreement tables as booktabs tabulars, with the
    Methods paragraph and the references, in a document that compiles on its own
    (packages booktabs and graphicx); every cell is escaped (:func:`tex_escape`)."""
    v = printed_view(r)
    study = r.title or r.study
    tex = [
        "% Written by `annotate report --latex`: the main tables of the human-alignment",
        "% report. Copy the table environments into a paper (needs booktabs, graphicx).",
        r"\documentclass{article}",
        r"\usepackage[T1]{fontenc}",
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage{booktabs}",
        r"\usepackage{graphicx}",
        r"\begin{document}",
        "",
        rf"\section*{{{tex_escape(v.title)}}}",
        "",
        r"\paragraph{Methods.}",
        tex_escape(methods_paragraph(r)),
        "",
    ]
    captions = {
        "alignment": f"Alignment of difficulty estimators with human judgement, {study} "
        "(cf. Table 2 of [1]).",
        "agreement": f"Agreement among annotators, {study}.",
    }
    shown = [t for t in v.tables if t.key in captions]
    for t in shown:
        tex += _tex_table(t, t.key, captions[t.key])
    if not shown:
        tex += [tex_escape(v.summary[-1]), ""]
    tex += [r"\section*{References}", r"\begin{enumerate}"]
    tex += [rf"\item[{{[{i}]}}] {tex_escape(ref)}" for i, ref in enumerate(REFERENCES, start=1)]
    tex += [r"\end{enumerate}", "", r"\end{document}", ""]
    path = inside(folder, "report.tex")
    path.write_text("\n".join(tex), encoding="utf-8")
    return path


def _f(x: float | None) -> str:
    return "" if x is None else repr(float(x))


def _f_row(row: Sequence[float | None]) -> list[str]:
    """:func:`_f` of every value of ``row``; one C-speed pass when all are Python floats
    (``repr(float(x))`` is then ``float.__repr__(x)``)."""
    if set(map(type, row)) <= {float}:
        return list(map(float.__repr__, row))
    return [_f(v) for v in row]


def write_pairwise_csv(path: Path, header: Sequence[str], g: Agreement) -> Path:
    """pairwise_kappa.csv: what :func:`write_csv` writes of the rows
    ``[annotator, *repr of each kappa ("" when undefined)]``, the kappa texts made and
    joined by :func:`annotate.services.json_ready.float_rows_json` (pydantic_core's
    encoder), else by :func:`annotate.services.json_ready.matrix_lines` (pyarrow): a
    number's text needs no quoting and is printable ASCII, so the line after the
    annotator is written as it is."""
    rows = float_rows_json(g.pairwise_kappa)
    if rows is not None and len(rows) == len(g.annotators):
        write_csv(path, header, ())
        with path.open("ab") as fh:  # the bytes write_csv's UTF-8 text file would get
            fh.write(
                b"".join(
                    [
                        _first_cell(a).encode("utf-8") + b"," + line.replace(b"null", b"") + b"\r\n"
                        for a, line in zip(g.annotators, rows, strict=True)
                    ]
                )
            )
        return path
    lines = matrix_lines(g.pairwise_kappa, ",", "")
    if lines is None or len(lines) != len(g.annotators):
        return write_csv(path, header, _pairwise_rows(g))
    write_csv(path, header, ())
    with path.open("a", encoding="utf-8", newline="") as fh:
        fh.writelines(
            [
                _first_cell(a) + "," + line + "\r\n"
                for a, line in zip(g.annotators, lines, strict=True)
            ]
        )
    return path


def _first_cell(c: object) -> str:
    """The first cell of a report CSV row of several cells as :func:`write_csv` writes it."""
    text = _cell(c)
    if "," not in text and '"' not in text:  # one_line left no CR or LF
        return text
    import csv
    import io

    buf = io.StringIO(newline="")
    csv.writer(buf).writerow([text, ""])
    return buf.getvalue()[: -len(",\r\n")]


def _pairwise_rows(g: Agreement) -> list[list[str]]:
    return [
        [a, *texts]
        for a, texts in zip(
            g.annotators,
            symmetric_texts(g.pairwise_kappa, float.__repr__) or map(_f_row, g.pairwise_kappa),
            strict=True,
        )
    ]


def _iv(i: Interval | None) -> list[str]:
    return ["", ""] if i is None else [repr(i.low), repr(i.high)]


def _est_cells(e: Estimate) -> list[str]:
    return [
        _f(e.value),
        *_iv(e.pairs_interval),
        *_iv(e.annotators_interval),
        *_iv(e.both_interval),
        e.reason or "",
    ]


_EST_HEAD = (
    "",
    "_low_pairs",
    "_high_pairs",
    "_low_annotators",
    "_high_annotators",
    "_low_both",
    "_high_both",
    "_reason",
)


def _csv_tables(
    r: HumanAlignmentReport,
) -> dict[str, tuple[list[str], list[list[str]] | None]]:
    """The report's CSVs by file name: header and rows; None as the rows of
    pairwise_kappa.csv (:func:`write_pairwise_csv` writes it)."""

    def head(name: str) -> list[str]:
        return [name + s for s in _EST_HEAD]

    out: dict[str, tuple[list[str], list[list[str]] | None]] = {}
    out["alignment.csv"] = (
        [
            "method",
            "label",
            "source",
            *head("consensus"),
            *head("kappa"),
            *head("mean_individual"),
            "pairs",
            "pairs_predicted",
            "tied_predictions",
            "notes",
        ],
        [
            [
                m.method,
                m.label,
                m.source,
                *_est_cells(m.consensus),
                *_est_cells(m.kappa),
                *_est_cells(m.mean_individual),
                str(m.pairs),
                str(m.pairs_predicted),
                str(m.tied_predictions),
                "; ".join(m.notes),
            ]
            for m in r.alignment
        ],
    )
    out["individual.csv"] = (
        ["method", "annotator", "alignment", "low_pairs", "high_pairs", "judged"],
        [
            [m.method, a.annotator, _f(a.value), _f(a.low), _f(a.high), str(a.judged)]
            for m in r.alignment
            for a in m.individual
        ],
    )
    out["predictions.csv"] = (
        [
            "pair",
            "first",
            "second",
            "subject",
            "votes_first",
            "votes_second",
            "skips",
            "consensus",
            "near_tie",
            "resolved",
            *r.methods,
        ],
        [
            [
                p.key,
                p.first,
                p.second,
                p.subject,
                str(p.n_first),
                str(p.n_second),
                str(p.n_skip),
                p.consensus,
                str(p.near_tie).lower(),
                str(p.resolved).lower(),
                *p.predictions,
            ]
            for p in r.pairs
        ],
    )
    out["subgroups.csv"] = (
        ["pool", "models", "method", *head("consensus"), *head("kappa"), "pairs", "notes"],
        [
            [
                s.pool,
                " ".join(s.models),
                s.method,
                *_est_cells(s.consensus),
                *_est_cells(s.kappa),
                str(s.pairs),
                "; ".join(s.notes),
            ]
            for s in r.subgroups
        ],
    )
    g = r.agreement
    out["agreement.csv"] = (
        [
            "statistic",
            "value",
            "low_pairs",
            "high_pairs",
            "low_annotators",
            "high_annotators",
            "reason",
            "pairs",
        ],
        [
            ["fleiss_kappa", *_est_cells(g.fleiss_kappa), str(g.fleiss_pairs)],
            [
                "fleiss_kappa_with_skips",
                *_est_cells(g.fleiss_kappa_with_skips),
                str(g.fleiss_with_skips_pairs),
            ],
            ["krippendorff_alpha", *_est_cells(g.krippendorff_alpha), str(g.alpha_pairs)],
            [
                "mean_pairwise_cohen_kappa",
                _f(g.mean_pairwise_kappa),
                "",
                "",
                "",
                "",
                g.mean_pairwise_reason or "",
                "",
            ],
        ],
    )
    rel = {a: (v, se) for a, v, se in r.human_scale.reliability}
    out["annotators.csv"] = (
        [
            "annotator",
            "judged",
            "skipped",
            "loo_kappa",
            "loo_kappa_reason",
            "loo_agreement",
            "loo_pairs",
            "reliability",
            "reliability_se",
        ],
        [
            [
                x.annotator,
                str(x.judged),
                str(x.skipped),
                _f(x.kappa),
                x.kappa_reason or "",
                _f(x.agreement),
                str(x.pairs),
                _f(rel.get(x.annotator, (None, None))[0]),
                _f(rel.get(x.annotator, (None, None))[1]),
            ]
            for x in g.leave_one_out
        ],
    )
    out["pairwise_kappa.csv"] = (["annotator", *g.annotators], None)  # write_pairwise_csv
    hs = r.human_scale
    out["human_scale.csv"] = (
        [
            "question",
            "subject",
            "group",
            "human_difficulty",
            "lower",
            "upper",
            "excluded",
            *r.methods,
        ],
        [
            [
                q.key,
                q.subject,
                str(q.group or ""),
                _f(q.difficulty),
                _f(q.lower),
                _f(q.upper),
                q.excluded or "",
                *(_f(r.difficulty[j][i]) for j in range(len(r.methods))),
            ]
            for i, q in enumerate(hs.questions)
        ],
    )
    out["correlations.csv"] = (
        [
            "method",
            "spearman",
            "spearman_p",
            "kendall",
            "kendall_p",
            "questions",
            "groups",
            "reason",
        ],
        [
            [
                c.method,
                _f(c.spearman),
                _f(c.spearman_p),
                _f(c.kendall),
                _f(c.kendall_p),
                str(c.n),
                str(c.groups),
                c.reason or "",
            ]
            for c in hs.correlations
        ],
    )
    return out


def write_report(
    r: HumanAlignmentReport, folder: Path, *, plots: bool = True, latex: bool = False
) -> WrittenReport:
    """Write ``report.md``, the CSVs, (with ``plots``) the PNGs and (with ``latex``)
    ``report.tex`` under ``folder``.

    pairwise_kappa.csv (19 MB at 1,000 annotators) is written by a second thread while
    this one writes the rest: its texts are made in pyarrow, which lets the other
    thread run (:func:`write_pairwise_csv`). The kappa matrix is converted once for it
    and for the Markdown (:func:`annotate.services.json_ready.float_matrix`, kept for the
    call, or for the caller's :func:`annotate.services.json_ready.kept_texts` scope)."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    folder = output_folder(folder)
    with kept_scope(), ThreadPoolExecutor(max_workers=1) as pool:
        float_matrix(r.agreement.pairwise_kappa)  # here, before both threads read it
        files: list[Path] = []
        pairwise = None
        for name, (header, rows) in _csv_tables(r).items():
            path = inside(folder, name)
            if rows is None:
                run = contextvars.copy_context().run  # the scope's kept matrix and texts
                pairwise = pool.submit(run, write_pairwise_csv, path, header, r.agreement)
                files.append(path)
            else:
                files.append(write_csv(path, header, rows))
        written = _write_rest(r, folder, files, plots=plots, latex=latex)
        if pairwise is not None:
            pairwise.result()  # its error, if any, raised here
    return written


def _write_rest(
    r: HumanAlignmentReport, folder: Path, files: list[Path], *, plots: bool, latex: bool
) -> WrittenReport:
    """:func:`write_report` after the CSVs: the plots, report.md and report.tex."""
    notes: list[str] = []
    t = time.perf_counter()
    pngs: list[Path] = []
    if plots:
        from annotate.services.plots import write_plots

        pngs, notes = write_plots(r, folder)
    plot_seconds = time.perf_counter() - t
    v = printed_view(r)
    md = [f"# {md_escape(v.title)}", ""]
    md += [md_escape(line) + "  " for line in v.summary] + [""]
    md += ["## Methods", "", md_escape(methods_paragraph(r)), ""]
    figures = {p.name: p for p in pngs}
    captions = {
        "alignment.png": "Consensus alignment and Cohen's kappa per method",
        "pools.png": "Alignment by model pool (Figure 7)",
        "individual.png": "Individual alignment per annotator",
        "difficulty_by_subject.png": "Difficulty per subject",
        "estimator_vs_human.png": "Estimators vs the human difficulty scale",
    }
    after = {
        "alignment": ["alignment.png"],
        "individual": ["individual.png"],
        "subgroups": ["pools.png"],
        "correlations": ["estimator_vs_human.png", "difficulty_by_subject.png"],
    }
    for table in v.tables:
        md += _md_table(table)
        for png in after.get(table.key, []):
            if png in figures:
                md += [f"![{captions[png]}]({png})", ""]
    if "difficulty_by_subject.png" in figures and "correlations" not in {t.key for t in v.tables}:
        md += ["![Difficulty per subject](difficulty_by_subject.png)", ""]
    if notes:
        md += ["## Figures not drawn", ""] + [f"- {md_escape(n)}" for n in notes] + [""]
    if r.item_notes:  # annotators' comments and flags (issue 12)
        md += ["## Comments and flags", ""] + [f"- {md_escape(n)}" for n in r.item_notes] + [""]
    md += ["## Method notes", ""]
    for m in r.alignment:
        for n in m.notes:
            md.append(f"- {md_escape(m.label)}: {md_escape(n)}")
    md += [
        "- Consensus (eq. 9): majority of the non-skipped votes per pair; a pair whose "
        "majority margin is at most the near-tie margin is resolved by a reliability-weighted "
        "vote or left out (see ranking.alignment).",
        "- A tied prediction (equal difficulties) is reported as a tie and counts as a miss.",
        "- Annotator-bootstrap intervals of the agreement statistics never pair an annotator "
        "with its own copy.",
        "- Pairwise Cohen's kappa and leave-one-out agreement have no intervals.",
        "",
    ]
    md += ["## References", ""]
    md += [f"{i}. {md_escape(ref)}" for i, ref in enumerate(REFERENCES, start=1)] + [""]
    md_path = inside(folder, "report.md")
    md_path.write_text("\n".join(md), encoding="utf-8")
    files = [md_path, *files, *pngs]
    if latex:
        files.insert(1, write_latex(r, folder))
    return WrittenReport(folder, tuple(files), tuple(notes), plot_seconds)


def write_arena_report(r: ArenaReport, folder: Path) -> WrittenReport:
    """Write ``report.md``, ``leaderboard.csv`` and ``annotators.csv`` of an arena study
    under ``folder`` (no plots)."""
    folder = output_folder(folder)
    board = write_csv(
        inside(folder, "leaderboard.csv"),
        ("rank", "model", "group", "rating", "lower", "upper", "comparisons",
         "both_bad_share", "both_bad_lower", "both_bad_upper"),
        (
            (m.rank, m.name, m.detail, repr(m.rating), repr(m.lower), repr(m.upper),
             m.comparisons, *(("", "", "") if m.both_bad is None else map(repr, m.both_bad)))
            for m in r.leaderboard
        ),
    )  # fmt: skip
    people = write_csv(
        inside(folder, "annotators.csv"),
        ("annotator", "votes", "status", "reason", "ability", "ability_lower",
         "ability_upper", "fast_share", "left_share", "left_p_value", "tie_rate",
         "both_bad_rate", "majority_agreement", "votes_to_verdict", "alerts"),
        (
            (v.annotator, v.votes, v.status, v.reason, _f(v.ability), _f(v.ability_lower),
             _f(v.ability_upper), _f(v.fast_share), _f(v.left_share), _f(v.left_p_value),
             _f(v.tie_rate), _f(v.both_bad_rate), _f(v.majority_agreement),
             "" if v.votes_to_verdict is None else v.votes_to_verdict, "; ".join(v.alerts))
            for v in r.verdicts
        ),
    )  # fmt: skip
    v = arena_view(r)
    md = [f"# {md_escape(v.title)}", ""]
    md += [md_escape(line) + "  " for line in v.summary] + [""]
    for table in v.tables:
        md += _md_table(table)
    if r.verdict_notes and not r.verdicts:  # else under the verdict table
        md += ["## Notes", ""] + [f"- {md_escape(n)}" for n in r.verdict_notes] + [""]
    if r.item_notes:
        md += ["## Comments and flags", ""] + [f"- {md_escape(n)}" for n in r.item_notes] + [""]
    md += ["## References", ""]
    md += [
        "1. Zirui Liu et al. am-ELO: A Stable Framework for Arena-based LLM Evaluation. "
        "ICML 2025 (the Stable Arena loop and the annotator verdicts).",
        "2. Edwin B. Wilson. Probable inference, the law of succession, and statistical "
        "inference. JASA 22 (1927), 209-212 (the both-bad intervals).",
        "",
    ]
    md_path = inside(folder, "report.md")
    md_path.write_text("\n".join(md), encoding="utf-8")
    return WrittenReport(folder, (md_path, board, people), (), 0.0)
