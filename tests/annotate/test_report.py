"""The human-alignment report: numbers by hand and against independent libraries."""

from __future__ import annotations

import csv
import json
import math
import uuid
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import Engine, text
from sqlmodel import Session
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from annotate.cli import main
from annotate.errors import AnnotateError, InputFileError
from annotate.services.db import open_store
from annotate.services.estimators import Matrix, estimate
from annotate.services.importing import import_paths
from annotate.services.report import (
    default_study,
    human_alignment_report,
    md_escape,
    write_report,
)
from annotate.services.voting import VotingSession
from annotate.store import repo
from ranking.alignment import alignment_report

# --- a hand-built study ---------------------------------------------------------------

QUESTIONS = ["a", "b", "c", "d", "e", "f"]
PAIRS = {"p1": ("a", "b"), "p2": ("c", "d"), "p3": ("e", "f"), "p4": ("a", "c"), "p5": ("b", "e")}
# A user difficulty column: p1 -> second, p2 -> tie, p3 -> first, p4 -> second, p5 -> second.
HAND_DIFFICULTY = {"a": 1, "b": 2, "c": 3, "d": 3, "e": 5, "f": 4}
# 8 models x 6 questions (solved by 7, 6, 5, 4, 2, 3 models); pools m0-m3 and m4-m7.
MODELS = [f"m{i}" for i in range(8)]
MATRIX = np.array(
    [
        [1, 1, 1, 1, 1, 1, 1, 0],
        [1, 1, 1, 0, 1, 1, 0, 1],
        [1, 0, 1, 1, 0, 1, 1, 0],
        [0, 1, 0, 1, 1, 0, 1, 0],
        [0, 0, 1, 0, 0, 1, 0, 0],
        [1, 0, 0, 0, 1, 0, 0, 1],
    ],
    dtype=float,
)
VOTES = {
    "A1": {"p1": "second", "p2": "first", "p3": "first", "p4": "second", "p5": "skip"},
    "A2": {"p1": "second", "p2": "second", "p3": "second", "p4": "second", "p5": "first"},
    "A3": {"p1": "first", "p2": "skip", "p3": "first", "p4": "skip", "p5": "skip"},
}


def make_study(
    root: Path,
    name: str = "hand",
    pairs: dict[str, tuple[str, str]] | None = None,
    pools: bool = True,
    matrix: bool = True,
) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        f'name = "{name}"\nkind = "difficulty"\ntitle = "Hand [b]study[/b]"\n', encoding="utf-8"
    )
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps({"id": q, "subject": "math", "text": q}) + "\n" for q in QUESTIONS),
        encoding="utf-8",
    )
    rows = ["pair_id,first,second"] + [f"{k},{a},{b}" for k, (a, b) in (pairs or PAIRS).items()]
    (folder / "pairs.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    if matrix:
        lines = ["question_id,model,score"]
        for i, q in enumerate(QUESTIONS):
            for j, m in enumerate(MODELS):
                lines.append(f"{q},{m},{int(MATRIX[i, j])}")
        (folder / "responses.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if pools:
            meta = ["model,pool"] + [
                f"{m},{'small' if i < 4 else 'large'}" for i, m in enumerate(MODELS)
            ]
            (folder / "models.csv").write_text("\n".join(meta) + "\n", encoding="utf-8")
    return folder


def cast(
    engine: Engine, study: str, votes: dict[str, dict[str, str]], *, raw_names: bool = False
) -> None:
    """Insert current votes with exact stored choices (first/second/skip).

    With ``raw_names`` the annotators must already exist under exactly these names
    (a database written before names were normalised).
    """
    with Session(engine) as s, s.begin():
        st = repo.get_study(s, study)
        assert st is not None
        items = repo.item_ids(s, st.id)
        rows = []
        for ann, choices in votes.items():
            if raw_names:
                aid = s.execute(
                    text("SELECT id FROM annotator WHERE name = :n"), {"n": ann}
                ).scalar_one()
            else:
                aid = repo.annotator_id(s, ann)
            for key, choice in choices.items():
                rows.append(
                    (
                        str(uuid.uuid4()),
                        st.id,
                        aid,
                        items[key],
                        choice,
                        False,
                        2000,
                        False,
                        "2026-01-01 00:00:00",
                        None,
                    )
                )
        repo.bulk_insert_votes(s, rows)


@pytest.fixture
def hand_engine(tmp_path: Path) -> Engine:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    cast(engine, "hand", VOTES)
    return engine


@pytest.fixture
def hand_file(tmp_path: Path) -> Path:
    p = tmp_path / "hand.csv"
    p.write_text(
        "question_id,hand\n" + "".join(f"{q},{v}\n" for q, v in HAND_DIFFICULTY.items()),
        encoding="utf-8",
    )
    return p


def method(rep, name: str):
    return next(m for m in rep.alignment if m.method == name)


CODE = {"first": 1, "second": 2, "skip": 0}


# --- alignment by hand --------------------------------------------------------------


def test_hand_predictions_individual_and_consensus(hand_engine: Engine, hand_file: Path) -> None:
    rep = human_alignment_report(hand_engine, "hand", difficulty_file=hand_file, n_boot=200)
    m = method(rep, "hand")
    # a tie in difficulty is reported as a tie, not guessed
    assert [p.predictions[rep.methods.index("hand")] for p in rep.pairs] == [
        "second",
        "tie",
        "first",
        "second",
        "second",
    ]
    assert m.tied_predictions == 1
    # individual: A1 3 of 4 (the tie is a miss), A2 2 of 5, A3 1 of 2 (skips not counted)
    ind = {a.annotator: (a.value, a.judged) for a in m.individual}
    # annotator names are stored case-normalised (issue 9): "A1" votes as "a1"
    assert ind == {"a1": (0.75, 4), "a2": (0.4, 5), "a3": (0.5, 2)}
    # consensus: p2 is a 1-1 near-tie; weights logit((agree+1)/(judged+2)) on decisive
    # pairs: A1 3/3 -> ln 4, A2 3/4 -> ln 2, A3 1/2 -> 0, so A1's "first" wins.
    assert [p.consensus for p in rep.pairs] == ["second", "first", "first", "second", "first"]
    nt = rep.near_ties
    assert (nt.near_ties, nt.resolved, nt.excluded, nt.pairs) == (1, 1, 0, ("p2",))
    assert [p.resolved for p in rep.pairs] == [False, True, False, False, False]
    # eq. 9: predictions 2,tie,1,2,2 vs consensus 2,1,1,2,1 -> 3 of 5
    assert m.consensus.value == pytest.approx(0.6)
    assert m.pairs == 5
    assert m.mean_individual.value == pytest.approx((0.75 + 0.4 + 0.5) / 3)
    kappa = cohen_kappa_score([2, 0, 1, 2, 2], [2, 1, 1, 2, 1])
    assert m.kappa.value == pytest.approx(kappa)
    # every number has intervals over pairs and over annotators
    for est in (m.consensus, m.kappa, m.mean_individual):
        for iv in (est.pairs_interval, est.annotators_interval):
            assert iv is not None
            assert iv.low <= iv.high
    assert 0.0 <= m.consensus.pairs_interval.low <= m.consensus.pairs_interval.high <= 1.0
    assert all(a.low is not None and a.low <= a.value <= a.high for a in m.individual)


def test_estimators_come_from_the_stored_matrix(hand_engine: Engine) -> None:
    rep = human_alignment_report(hand_engine, "hand", n_boot=0)
    assert rep.methods == ("eip", "simple", "irt-1pl", "irt-2pl", "mirt")
    M = Matrix(MATRIX, QUESTIONS, MODELS)
    pairs = np.array([[QUESTIONS.index(a), QUESTIONS.index(b)] for a, b in PAIRS.values()])
    pair = [list(PAIRS).index(p) for v in VOTES.values() for p in v]
    ann = [i for i, v in enumerate(VOTES.values()) for _ in v]
    code = [CODE[c] for v in VOTES.values() for c in v.values()]
    for name in rep.methods:
        d = dict(estimate(M, name).questions)
        ref = alignment_report([[d[q] for q in QUESTIONS]], pairs, pair, ann, code, n_boot=0)
        m = method(rep, name)
        assert m.consensus.value == pytest.approx(ref.consensus_alignment[0].value), name
        assert m.kappa.value == ref.kappa[0].value or m.kappa.value == pytest.approx(
            ref.kappa[0].value
        )
        assert [a.value for a in m.individual] == pytest.approx(ref.individual.data[0].tolist())


def test_pools_recompute_the_estimator_on_their_models(hand_engine: Engine) -> None:
    rep = human_alignment_report(hand_engine, "hand", n_boot=50, subgroup_methods=("eip", "simple"))
    pools = [(s.pool, s.method) for s in rep.subgroups]
    assert pools == [
        ("small", "eip"),
        ("small", "simple"),
        ("large", "eip"),
        ("large", "simple"),
        ("whole", "eip"),
        ("whole", "simple"),
    ]
    whole = next(s for s in rep.subgroups if s.pool == "whole" and s.method == "eip")
    assert whole.consensus.value == method(rep, "eip").consensus.value
    small = next(s for s in rep.subgroups if s.pool == "small" and s.method == "simple")
    assert small.models == ("m0", "m1", "m2", "m3")
    d = dict(estimate(Matrix(MATRIX[:, :4], QUESTIONS, MODELS[:4]), "simple").questions)
    pairs = np.array([[QUESTIONS.index(a), QUESTIONS.index(b)] for a, b in PAIRS.values()])
    pair = [list(PAIRS).index(p) for v in VOTES.values() for p in v]
    ann = [i for i, v in enumerate(VOTES.values()) for _ in v]
    code = [CODE[c] for v in VOTES.values() for c in v.values()]
    ref = alignment_report([[d[q] for q in QUESTIONS]], pairs, pair, ann, code, n_boot=0)
    assert small.consensus.value == pytest.approx(ref.consensus_alignment[0].value)
    assert small.tied_predictions == int(ref.n_tied_predictions[0])


def test_voting_session_left_right_maps_to_first_second(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    vs = VotingSession(engine, "hand", "solo")
    wanted = {}
    while (shown := vs.current()) is not None:
        # always call the question with the later letter harder
        harder_left = shown.left.key > shown.right.key
        vs.vote("left" if harder_left else "right", 3000)
        first, second = PAIRS[shown.key]
        wanted[shown.key] = "first" if first > second else "second"
    rep = human_alignment_report(engine, "hand", n_boot=0)
    assert {p.key: p.consensus for p in rep.pairs} == wanted


# --- agreement against reference packages ---------------------------------------------


def ratings(votes: dict[str, dict[str, str]], *, skips: bool = False) -> np.ndarray:
    R = np.full((len(votes), len(PAIRS)), np.nan)
    for i, v in enumerate(votes.values()):
        for k, c in v.items():
            if c != "skip" or skips:
                R[i, list(PAIRS).index(k)] = CODE[c]
    return R


def test_agreement_equals_reference_packages(hand_engine: Engine) -> None:
    rep = human_alignment_report(hand_engine, "hand", n_boot=100)
    g = rep.agreement
    R = ratings(VOTES)
    ref_alpha = krippendorff.alpha(reliability_data=R, level_of_measurement="nominal")
    assert g.krippendorff_alpha.value == pytest.approx(ref_alpha)
    # Fleiss on the pairs judged by all three annotators: p1 and p3
    complete = ~np.isnan(R).any(axis=0)
    assert complete.tolist() == [True, False, True, False, False]
    table = np.stack([(R[:, complete] == c).sum(axis=0) for c in (1, 2)], axis=1)
    assert g.fleiss_kappa.value == pytest.approx(sm_fleiss(table))
    assert g.fleiss_pairs == 2
    # skip as a third category: every annotator voted on every pair
    R3 = ratings(VOTES, skips=True)
    table3 = np.stack([(c == R3).sum(axis=0) for c in (0, 1, 2)], axis=1)
    assert g.fleiss_kappa_with_skips.value == pytest.approx(sm_fleiss(table3))
    # pairwise Cohen on shared judged pairs
    for i in range(3):
        for j in range(3):
            both = ~np.isnan(R[i]) & ~np.isnan(R[j])
            got = g.pairwise_kappa[i][j]
            assert g.pairwise_overlap[i][j] == int(both.sum())
            if i != j:
                ref = cohen_kappa_score(R[i, both], R[j, both], labels=[1, 2])
                assert got == pytest.approx(ref), (i, j)
    assert g.krippendorff_alpha.pairs_interval is not None
    assert g.krippendorff_alpha.annotators_interval is not None


# --- degenerate cases -------------------------------------------------------------------


def assert_no_nan(obj: object) -> None:
    text = json.dumps(obj)
    assert "NaN" not in text
    assert "Infinity" not in text


def test_no_votes(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    rep = human_alignment_report(engine, "hand", n_boot=20)
    for m in rep.alignment:
        assert m.consensus.value is None
        assert "no votes" in (m.consensus.reason or "")
        assert m.pairs == 0
    g = rep.agreement
    assert g.fleiss_kappa.value is None
    assert g.fleiss_kappa.reason
    assert g.krippendorff_alpha.value is None
    assert g.krippendorff_alpha.reason
    assert not rep.human_scale.fitted
    assert rep.human_scale.reason
    d = rep.as_dict()
    assert_no_nan(d)
    assert d["alignment"][0]["consensus"] is None
    assert d["alignment"][0]["individual"] == {}
    written = write_report(rep, tmp_path / "out")
    assert (tmp_path / "out" / "report.md").exists()
    assert any("not drawn" in n for n in written.notes)


def test_one_annotator(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    cast(engine, "hand", {"A1": VOTES["A1"]})
    rep = human_alignment_report(engine, "hand", n_boot=50)
    eip = method(rep, "eip")
    assert eip.consensus.value is not None
    assert eip.consensus.annotators_interval is None  # one annotator: nothing to resample
    assert eip.consensus.pairs_interval is not None
    g = rep.agreement
    assert g.fleiss_kappa.value is None
    assert "1 rating" in (g.fleiss_kappa.reason or "")
    assert g.krippendorff_alpha.value is None
    assert "two or more raters" in (g.krippendorff_alpha.reason or "")
    assert g.leave_one_out[0].kappa is None
    assert "only one rater" in (g.leave_one_out[0].kappa_reason or "")
    assert g.mean_pairwise_kappa is None
    assert g.mean_pairwise_reason
    assert_no_nan(rep.as_dict())
    write_report(rep, tmp_path / "out")


def test_all_skips(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    cast(engine, "hand", {a: {p: "skip" for p in PAIRS} for a in ("A1", "A2")})
    rep = human_alignment_report(engine, "hand", n_boot=50)
    for m in rep.alignment:
        assert m.consensus.value is None
        assert "skips" in (m.consensus.reason or "")
    g = rep.agreement
    assert g.krippendorff_alpha.value is None
    assert g.krippendorff_alpha.reason
    assert g.fleiss_kappa.value is None
    assert g.fleiss_kappa.reason
    # skip as a category: everyone used one category
    assert g.fleiss_kappa_with_skips.value is None
    assert "category" in (g.fleiss_kappa_with_skips.reason or "")
    assert rep.near_ties.without_votes == 5
    assert not rep.human_scale.fitted
    assert_no_nan(rep.as_dict())
    write_report(rep, tmp_path / "out")


def test_everyone_one_category(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    cast(engine, "hand", {a: {p: "first" for p in PAIRS} for a in ("A1", "A2", "A3")})
    rep = human_alignment_report(engine, "hand", n_boot=50)
    g = rep.agreement
    assert g.fleiss_kappa.value is None
    assert "category" in (g.fleiss_kappa.reason or "")
    assert g.krippendorff_alpha.value is None
    assert "expected disagreement is zero" in (g.krippendorff_alpha.reason or "")
    assert all(row[0] is None for row in g.pairwise_kappa)
    assert_no_nan(rep.as_dict())


def test_disconnected_design_gets_one_scale_per_group(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    pairs = {"p1": ("a", "b"), "p2": ("c", "d")}
    import_paths(engine, [make_study(tmp_path / "studies", pairs=pairs)])
    cast(
        engine,
        "hand",
        {
            "A1": {"p1": "first", "p2": "second"},
            "A2": {"p1": "second", "p2": "second"},
            "A3": {"p1": "first", "p2": "second"},
        },
    )
    rep = human_alignment_report(engine, "hand", n_boot=20)
    hs = rep.human_scale
    assert [(g.index, g.questions, g.fitted) for g in hs.groups] == [(1, 2, True), (2, 2, True)]
    # c and d: d was always voted harder, so the plain fit has no finite scale; the weak
    # priors of a small pilot give one, with a wide interval (issue 10)
    assert hs.prior_groups == (2,)
    by_key = {q.key: q for q in hs.questions}
    assert by_key["a"].group == 1
    assert by_key["a"].difficulty is not None
    assert by_key["a"].difficulty > by_key["b"].difficulty  # 2 of 3 say a is harder
    assert by_key["d"].difficulty > by_key["c"].difficulty  # type: ignore[operator]
    assert method(rep, "eip").consensus.value is not None  # the rest goes on
    assert_no_nan(rep.as_dict())


def test_strict_order_gets_a_prior_scale(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    # every vote agrees with one strict order: no finite maximum-likelihood scale
    order = {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5}
    votes = {
        ann: {k: ("first" if order[x] > order[y] else "second") for k, (x, y) in PAIRS.items()}
        for ann in ("A1", "A2")
    }
    cast(engine, "hand", votes)
    rep = human_alignment_report(engine, "hand", n_boot=20)
    hs = rep.human_scale
    # no finite maximum-likelihood scale, but the weak priors give a finite one (issue 10)
    assert hs.fitted
    assert hs.prior_groups == (1,)
    got = {q.key: q.difficulty for q in hs.questions}
    assert all(v is not None and math.isfinite(v) for v in got.values())
    assert got["a"] < got["c"] < got["f"]  # type: ignore[operator]
    assert method(rep, "eip").consensus.value == pytest.approx(method(rep, "eip").consensus.value)
    write_report(rep, tmp_path / "out")


def test_human_scale_correlates_estimators(tmp_path: Path, hand_file: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    # five annotators; each misjudges a different pair, so on every pair the harder
    # question (by HAND_DIFFICULTY) gets 4 of 5 votes and no question is an extreme
    votes: dict[str, dict[str, str]] = {f"V{i}": {} for i in range(5)}
    for j, (k, (x, y)) in enumerate(PAIRS.items()):
        harder = "first" if HAND_DIFFICULTY[x] >= HAND_DIFFICULTY[y] else "second"
        easier = "second" if harder == "first" else "first"
        for i in range(5):
            votes[f"V{i}"][k] = easier if (i + j) % 5 == 0 else harder
    cast(engine, "hand", votes)
    rep = human_alignment_report(engine, "hand", difficulty_file=hand_file, n_boot=0)
    hs = rep.human_scale
    assert hs.fitted, hs.reason
    assert len(hs.groups) == 1  # every question is linked to every other
    fitted = [q for q in hs.questions if q.difficulty is not None]
    assert all(q.lower <= q.difficulty <= q.upper for q in fitted)
    assert [c.method for c in hs.correlations] == list(rep.methods)
    assert len(hs.reliability) == 5
    # one group: the coefficients are scipy's on the fitted questions
    hand = next(c for c in hs.correlations if c.method == "hand")
    xs = [HAND_DIFFICULTY[q.key] for q in fitted]
    ys = [q.difficulty for q in fitted]
    assert hand.n == len(fitted)
    assert hand.spearman == pytest.approx(spearmanr(xs, ys).statistic)
    assert hand.kendall == pytest.approx(kendalltau(xs, ys).statistic)
    # few questions: the p-value is exact, over every ordering (scipy's is a t approximation)
    from itertools import permutations

    obs = abs(spearmanr(xs, ys).statistic)
    perm = [abs(spearmanr(xs, [ys[i] for i in p]).statistic) for p in permutations(range(len(ys)))]
    assert hand.spearman_p == pytest.approx(np.mean([r >= obs - 1e-9 for r in perm]))


def test_study_without_matrix_still_reports_user_columns(tmp_path: Path, hand_file: Path) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies", matrix=False)])
    cast(engine, "hand", VOTES)
    rep = human_alignment_report(engine, "hand", difficulty_file=hand_file, n_boot=0)
    assert method(rep, "eip").consensus.value is None
    assert "no response matrix" in (method(rep, "eip").consensus.reason or "")
    assert method(rep, "hand").consensus.value == pytest.approx(0.6)
    assert rep.subgroups == ()


def test_partial_difficulty_column_uses_the_pairs_it_covers(
    hand_engine: Engine, tmp_path: Path
) -> None:
    p = tmp_path / "part.csv"
    p.write_text("question_id,part,extra\na,1,\nb,2,1\nc,3,2\nd,4,3\nzz,9,9\n", encoding="utf-8")
    rep = human_alignment_report(hand_engine, "hand", difficulty_file=p, n_boot=0)
    part = method(rep, "part")
    assert part.pairs_predicted == 3  # p1, p2, p4 (e and f missing)
    assert any("3 of 5 pairs" in n for n in part.notes)
    assert any("not in the study" in n for n in part.notes)
    preds = [p.predictions[rep.methods.index("part")] for p in rep.pairs]
    assert preds == ["second", "second", "n/a", "second", "n/a"]


def test_bad_difficulty_file(hand_engine: Engine, tmp_path: Path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text("question_id,x\na,hard\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=r"bad.csv:2: field 'x'"):
        human_alignment_report(hand_engine, "hand", difficulty_file=p)
    q = tmp_path / "noid.csv"
    q.write_text("id,x\na,1\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="question_id"):
        human_alignment_report(hand_engine, "hand", difficulty_file=q)


# --- default study, JSON and CLI -----------------------------------------------------------


def test_default_study(tmp_path: Path) -> None:
    engine = open_store(tmp_path / "v.db", seed_demo=True)
    with pytest.raises(AnnotateError, match="no difficulty study has votes"):
        default_study(engine)
    import_paths(engine, [make_study(tmp_path / "studies")])
    cast(engine, "hand", VOTES)
    assert default_study(engine) == "hand"
    cast(engine, "demo-difficulty", {"A1": {"p01": "first"}})
    with pytest.raises(AnnotateError, match=r"hand \(12 votes\).*demo-difficulty|demo-difficulty"):
        default_study(engine)
    with pytest.raises(AnnotateError, match="arena study"):
        human_alignment_report(engine, "demo-arena")


def test_cli_json_interface(
    hand_engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str], hand_file: Path
) -> None:
    out = tmp_path / "out"
    db = str(tmp_path / "v.db")
    code = main(
        [
            "--db",
            db,
            "report",
            "--study",
            "hand",
            "--json",
            "--out",
            str(out),
            "--boot",
            "100",
            "--seed",
            "3",
            "--difficulty",
            str(hand_file),
        ]
    )
    stdout, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(stdout)
    assert_no_nan(doc)
    names = [a["method"] for a in doc["alignment"]]
    assert names == ["eip", "simple", "irt-1pl", "irt-2pl", "mirt", "hand"]
    for a in doc["alignment"]:
        assert {"method", "consensus", "kappa", "pairs", "individual"} <= set(a)
        assert 0.0 <= a["consensus"] <= 1.0
        assert isinstance(a["pairs"], int)
        assert all(0.0 <= v <= 1.0 for v in a["individual"].values())
    hand = doc["alignment"][-1]
    assert hand["consensus"] == pytest.approx(0.6)
    assert hand["individual"] == {"a1": 0.75, "a2": 0.4, "a3": 0.5}  # names case-normalised
    assert hand["pairs"] == 5
    assert len(hand["consensus_ci"]["pairs"]) == 2
    ag = doc["agreement"]
    assert {"fleiss_kappa", "krippendorff_alpha", "fleiss_kappa_reason"} <= set(ag)
    assert doc["near_ties"]["near_ties"] == 1
    for name in (
        "report.md",
        "alignment.csv",
        "individual.csv",
        "predictions.csv",
        "agreement.csv",
        "alignment.png",
        "individual.png",
        "difficulty_by_subject.png",
        "pools.png",
    ):
        assert (out / name).exists(), name
    with (out / "individual.csv").open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["method"] == "hand"]
    assert {r["annotator"]: float(r["alignment"]) for r in rows} == {
        "a1": 0.75,
        "a2": 0.4,
        "a3": 0.5,
    }
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "Hand \\[b\\]study\\[/b\\]" in md  # the title is literal, not markup
    assert "![" in md


def test_cli_undefined_agreement_is_null_with_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    cast(engine, "hand", {"solo": VOTES["A1"]})
    code = main(
        [
            "--db",
            str(tmp_path / "v.db"),
            "report",
            "--json",
            "--boot",
            "20",
            "--out",
            str(tmp_path / "o"),
            "--no-plots",
        ]
    )
    stdout, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["study"] == "hand"  # the only difficulty study with votes
    assert doc["agreement"]["fleiss_kappa"] is None
    assert doc["agreement"]["fleiss_kappa_reason"]
    assert doc["agreement"]["krippendorff_alpha"] is None
    assert doc["agreement"]["krippendorff_alpha_reason"]


def test_cli_text_and_errors(
    hand_engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "--db",
            str(tmp_path / "v.db"),
            "report",
            "--study",
            "hand",
            "--boot",
            "20",
            "--out",
            str(tmp_path / "o"),
            "--no-plots",
        ]
    )
    stdout, _ = capsys.readouterr()
    assert code == 0
    assert "Alignment with human judgement (Table 2)" in stdout
    assert "near-tie rule (weighted, margin 0) touched 1 pair(s)" in stdout
    code = main(["--db", str(tmp_path / "v.db"), "report", "--study", "nope"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "no study named 'nope'" in err


def test_md_escape_is_literal() -> None:
    assert md_escape("a|b [x](y) *z* <b>\nnext") == "a\\|b \\[x\\](y) \\*z\\* \\<b\\> next"


def test_no_bootstrap_means_no_intervals(hand_engine: Engine) -> None:
    rep = human_alignment_report(hand_engine, "hand", n_boot=0)
    for m in rep.alignment:
        assert m.consensus.value is not None
        assert m.consensus.pairs_interval is None
        assert m.consensus.annotators_interval is None
    assert rep.agreement.krippendorff_alpha.pairs_interval is None
    d = rep.as_dict()
    assert d["alignment"][0]["consensus_ci"] == {"pairs": None, "annotators": None, "both": None}
    assert d["n_boot"] == 0


def test_bootstrap_is_reproducible_from_the_seed(hand_engine: Engine) -> None:
    one = human_alignment_report(hand_engine, "hand", n_boot=100, seed=5).as_dict()
    two = human_alignment_report(hand_engine, "hand", n_boot=100, seed=5).as_dict()
    other = human_alignment_report(hand_engine, "hand", n_boot=100, seed=6).as_dict()
    assert one["alignment"] == two["alignment"]
    assert one["agreement"] == two["agreement"]
    assert one["alignment"] != other["alignment"]


def test_infinite_difficulties_keep_their_order(hand_engine: Engine, tmp_path: Path) -> None:
    p = tmp_path / "inf.csv"
    p.write_text("question_id,inf\na,-inf\nb,inf\nc,inf\nd,inf\ne,1\nf,0\n", encoding="utf-8")
    rep = human_alignment_report(hand_engine, "hand", difficulty_file=p, n_boot=0)
    preds = [r.predictions[rep.methods.index("inf")] for r in rep.pairs]
    # p1 a<b, p2 c=d (both +inf: a tie), p3 e>f, p4 a<c, p5 b>e
    assert preds == ["second", "tie", "first", "second", "first"]


def test_near_tie_margin_widens_the_rule(
    hand_engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # margins |n1 - n2| / (n1 + n2): p1 1/3, p2 0, p3 1/3, p4 1, p5 1
    code = main(
        [
            "--db",
            str(tmp_path / "v.db"),
            "report",
            "--study",
            "hand",
            "--json",
            "--boot",
            "0",
            "--near-tie-margin",
            "0.34",
            "--no-plots",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    stdout, err = capsys.readouterr()
    assert code == 0, err
    nt = json.loads(stdout)["near_ties"]
    assert nt["margin"] == 0.34
    assert nt["pairs"] == ["p1", "p2", "p3"]
    assert nt["near_ties"] == 3
    assert nt["resolved"] + nt["excluded"] == 3
