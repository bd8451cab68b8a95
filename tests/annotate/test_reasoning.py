"""ReasonerRank inputs (annotate.services.reasoning, annotate.services.text_encoders):
parsing the structured answer, the structure-penalty table, answer normalisation,
consistency with an encoder of known similarities, input errors, hostile text, the demo,
and comparing ranking files."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.errors import AnnotateError, InputFileError
from annotate.services.db import bundled_studies_dir
from annotate.services.json_ready import check_json
from annotate.services.reasoning import (
    PROMPTS,
    ParsedResponse,
    compare_rankings,
    normalize_answer,
    parse_response,
    prompt_for,
    rank_outputs,
    read_outputs,
    read_ranking_file,
    response_penalty,
    score_outputs,
    write_rank_outputs,
)
from annotate.services.text_encoders import (
    Encoder,
    HashedNgramEncoder,
    block_similarities,
    default_encoder,
)

COMPLETE = """Answer: B

Reasoning:

Step 1: Water boils at 100 degrees at sea level.
Step 2: Up a mountain the air pressure is lower.
Step 3: Lower pressure lowers the boiling point.

Supporting Evidence:

- Boiling point depends on pressure.
- Mountain air is thinner.
- Cooking pasta takes longer at altitude.

Conclusion:

- The answer is B.
"""

# ---------------------------------------------------------------------------
# parsing and the structure penalty (paper sec. 3.1.1), term by term
# ---------------------------------------------------------------------------

PENALTY_TABLE = [
    ("complete", COMPLETE, 0.0),
    ("answer empty", COMPLETE.replace("Answer: B", "Answer:"), 1.0),
    (
        "answer is the template placeholder",
        COMPLETE.replace("B\n", "[Provide the direct answer.]\n", 1),
        1.0,
    ),
    ("conclusion missing", COMPLETE.split("Conclusion:")[0], 1.0),
    (
        "one step empty",
        COMPLETE.replace("Step 2: Up a mountain the air pressure is lower.", "Step 2:"),
        1.0,
    ),
    (
        "two steps missing",
        COMPLETE.replace("Step 2: Up a mountain the air pressure is lower.\n", "").replace(
            "Step 3: Lower pressure lowers the boiling point.\n", ""
        ),
        2.0,
    ),
    (
        "no reasoning section",
        COMPLETE.split("Reasoning:")[0]
        + "Supporting Evidence:"
        + COMPLETE.split("Supporting Evidence:")[1],
        3.0,
    ),
    (
        "one evidence item",
        COMPLETE.replace("- Mountain air is thinner.\n", "").replace(
            "- Cooking pasta takes longer at altitude.\n", ""
        ),
        2.0,
    ),
    ("no evidence section", COMPLETE.split("Supporting Evidence:")[0] + "Conclusion:\n- B.", 3.0),
    ("plain prose, no structure", "I think it is B because of pressure.", 8.0),
    ("empty response", "", 8.0),
    (
        "more steps than asked: no bonus",
        COMPLETE.replace("Step 3:", "Step 3: x\nStep 4: y\nStep 5:"),
        0.0,
    ),
]


@pytest.mark.parametrize(
    ("case", "text", "penalty"), PENALTY_TABLE, ids=[c[0] for c in PENALTY_TABLE]
)
def test_structure_penalty_table(case: str, text: str, penalty: float) -> None:
    assert response_penalty(parse_response(text)) == penalty


def test_parse_complete_response() -> None:
    p = parse_response(COMPLETE)
    assert p.answer == "B"
    assert p.steps[1] == "Up a mountain the air pressure is lower."
    assert len(p.steps) == 3
    assert p.evidence[2] == "Cooking pasta takes longer at altitude."
    assert p.conclusion == "The answer is B."


def test_parse_markdown_and_dynamic_template() -> None:
    text = (
        "**Answer:** 42\n\n## Reasoning\n- first idea\n- second idea\n  continued here\n"
        "- third\n- fourth\n\n### Supporting Evidence:\n1. one\n2) two\n\n**Conclusion:** 42 it is"
    )
    p = parse_response(text)
    assert p.answer == "42"
    assert p.steps == ("first idea", "second idea continued here", "third", "fourth")
    assert p.evidence == ("one", "two")
    assert p.conclusion == "42 it is"


def test_parse_without_markers_uses_paragraphs_and_keeps_numbers() -> None:
    p = parse_response(
        "Answer: 3.5\nReasoning:\nFirst paragraph.\n\nSecond\nparagraph.\nConclusion: ok"
    )
    assert p.answer == "3.5"
    assert p.steps == ("First paragraph.", "Second paragraph.")


def test_parse_repeated_header_is_text_and_crlf() -> None:
    p = parse_response("Answer: A\r\nReasoning:\r\nStep 1: x\r\nAnswer: C\r\nConclusion: A")
    assert p.answer == "A"
    assert p.steps == ("x Answer: C",)


def test_prompts_are_the_papers() -> None:
    assert "limit your reasoning in 3 steps" in PROMPTS["fixed"]
    assert "Step 1:" not in PROMPTS["dynamic"]
    assert prompt_for("Q?", "dynamic").count('"Q?"') == 1


# ---------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------

CHOICES = ["10 grams", "100 grams", "1000 grams", "10000 grams"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("C", "C"),
        ("C.", "C"),
        ("(C)", "C"),
        ("c", "C"),
        ("(c) 1000 grams", "C"),
        ("C) 1000 grams", "C"),
        ("Option C", "C"),
        ("The answer is C.", "C"),
        ("**C**", "C"),
        ("1000 grams", "C"),
        ("It is 1000 grams.", "C"),
        ("A kilogram is heavy", "a kilogram is heavy"),  # an article, not option A
        ("E", "e"),  # not an option: kept as text
    ],
)
def test_normalize_multiple_choice(raw: str, expected: str) -> None:
    assert normalize_answer(raw, choices=CHOICES) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("18", "18"),
        ("$18.00", "18"),
        ("Janet makes $1,234.50 every day.", "1234.5"),
        ("7 x 3 = 21", "21"),
        ("3/4", "0.75"),
        ("-5 degrees", "-5"),
        ("0.50", "0.5"),
        ("no number here", "no number here"),
    ],
)
def test_normalize_numbers(raw: str, expected: str) -> None:
    assert normalize_answer(raw, kind="number") == expected


def test_normalize_text_and_empty() -> None:
    assert normalize_answer('  "The answer is  Blue   Whale." ') == "blue whale"
    assert normalize_answer("ＰＡＲＩＳ!") == "paris"  # NFKC, case-folded
    assert normalize_answer("   ") == ""


# ---------------------------------------------------------------------------
# encoders and consistency
# ---------------------------------------------------------------------------


class StubEncoder:
    """Known vectors: every text is looked up in a table (unknown text: a zero vector)."""

    name = "stub"

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = table

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        return np.asarray([self.table.get(t, (0.0, 0.0, 0.0)) for t in texts], dtype=np.float64)


def _jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def structured(answer: str, steps: list[str], evidence: list[str], conclusion: str = "done") -> str:
    lines = [f"Answer: {answer}", "Reasoning:"] + [
        f"Step {i + 1}: {s}" for i, s in enumerate(steps)
    ]
    lines += (
        ["Supporting Evidence:"] + [f"- {e}" for e in evidence] + ["Conclusion:", f"- {conclusion}"]
    )
    return "\n".join(lines)


def test_consistency_with_stub_encoder_of_known_similarities(tmp_path: Path) -> None:
    # unit vectors: cos(x, y) = 0, cos(x, xy) = cos(y, xy) = 1/sqrt(2)
    s = 1 / np.sqrt(2)
    table = {"x": (1, 0, 0), "y": (0, 1, 0), "xy": (s, s, 0), "z": (0, 0, 1)}
    recs = [
        {
            "question_id": "q",
            "subset": "s",
            "model": "m1",
            "text": structured("A", ["x", "xy", "y"], ["z", "x"]),
        },
        {"question_id": "q", "subset": "s", "model": "m2", "text": structured("A", ["x"], [])},
        {
            "question_id": "q",
            "subset": "s",
            "model": "m3",
            "text": structured("B", ["x", "y", "x", "y"], ["y"]),
        },
    ]
    out = read_outputs([_jsonl(tmp_path / "o.jsonl", recs)])
    fixed = score_outputs(out, encoder=StubEncoder(table))
    # m1: C_reason = (cos(x,xy) + cos(xy,y)) / 2; C_evid = (1 + s + 0) / 3 (best of z, x per step)
    assert fixed.c_reason[0, 0] == pytest.approx(s, abs=1e-12)
    assert fixed.c_evid[0, 0] == pytest.approx((1 + s + 0) / 3, abs=1e-12)
    assert fixed.penalty[0, 0] == 1.0  # two evidence items
    # m2: one step, no evidence: both terms 0 (documented), penalty 2 + 3
    assert (fixed.c_reason[1, 0], fixed.c_evid[1, 0], fixed.penalty[1, 0]) == (0.0, 0.0, 5.0)
    # m3, fixed template: the first three steps only (x, y, x) -> C_reason 0
    assert fixed.c_reason[2, 0] == 0.0
    assert fixed.c_evid[2, 0] == pytest.approx(1 / 3)
    dynamic = score_outputs(out, encoder=StubEncoder(table), template="dynamic")
    assert dynamic.c_evid[2, 0] == pytest.approx(2 / 4)
    np.testing.assert_allclose(fixed.quality, fixed.c_reason + fixed.c_evid - fixed.penalty)


def test_hashed_encoder_is_deterministic_and_sparse_path_matches_dense() -> None:
    texts = ["the boiling point drops", "the boiling point falls with altitude", "pasta", ""]
    enc = default_encoder(texts)
    assert isinstance(enc, Encoder)
    v = enc.encode(texts)
    np.testing.assert_array_equal(v, HashedNgramEncoder().fit(texts).encode(texts))
    np.testing.assert_allclose(np.linalg.norm(v[:3], axis=1), 1.0)
    assert not v[3].any()
    assert v[0] @ v[1] > v[0] @ v[2]
    block = np.array([0, 0, 1, 1])
    slot = np.array([0, 1, 0, 1])
    sparse = enc.block_similarities(texts, block, slot, 2, 2)

    class Dense:
        name = "dense"

        def encode(self, t: Sequence[str]) -> npt.NDArray[np.float64]:
            return enc.encode(t)

    np.testing.assert_allclose(
        sparse, block_similarities(Dense(), texts, block, slot, 2, 2), atol=1e-12
    )


# ---------------------------------------------------------------------------
# inputs: one-line errors, hostile text
# ---------------------------------------------------------------------------

GOOD = {"question_id": "q1", "subset": "s", "model": "m", "text": "Answer: 1"}


@pytest.mark.parametrize(
    ("record", "field", "expected"),
    [
        ({**GOOD, "model": ""}, "model", "a non-empty string"),
        ({k: v for k, v in GOOD.items() if k != "subset"}, "subset", "a non-empty string"),
        ({**GOOD, "text": None}, "text", "the model's response as a string"),
        ({**GOOD, "choices": ["only one"]}, "choices", "a list of 2 to 26 option strings"),
        ({**GOOD, "gold": [1]}, "gold", "a string or a number"),
        ({**GOOD, "extra": 1}, "extra", "only question_id"),
    ],
)
def test_bad_records_name_file_line_field_expected(
    tmp_path: Path, record: dict[str, object], field: str, expected: str
) -> None:
    path = _jsonl(tmp_path / "bad.jsonl", [{**GOOD, "model": "other"}, record])
    with pytest.raises(InputFileError) as err:
        read_outputs([path])
    assert err.value.line == 2
    assert err.value.field == field
    assert expected in str(err.value)
    assert str(err.value).startswith(f"{path}:2: field '{field}'")


def test_duplicate_and_inconsistent_records(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "dup.jsonl", [GOOD, {**GOOD, "model": "n"}, GOOD])
    with pytest.raises(InputFileError, match=r"a second response .*\(first on line 1\)"):
        read_outputs([path])
    path = _jsonl(tmp_path / "sub.jsonl", [GOOD, {**GOOD, "model": "n", "subset": "t"}])
    with pytest.raises(InputFileError, match="one subset per question"):
        read_outputs([path])
    path = _jsonl(tmp_path / "one.jsonl", [GOOD])
    with pytest.raises(InputFileError, match="at least 2 models"):
        read_outputs([path])
    (tmp_path / "broken.jsonl").write_text('{"question_id": "q1",\n', encoding="utf-8")
    with pytest.raises(InputFileError, match=r"broken\.jsonl:1: not valid JSON"):
        read_outputs([tmp_path / "broken.jsonl"])


def test_hostile_text_is_literal_data(tmp_path: Path) -> None:
    hostile = (
        "Answer: \x1b[31mB\x1b]52;c;ZWNobw==\x07\n"
        "Reasoning:\nStep 1: {__import__('os').system('echo pwned')}\nStep 2: [bold]x[/]\n"
        "Step 3: " + "*" * 200_000 + "\n"
        "Supporting Evidence:\n- " + "(" * 100_000 + "\nConclusion:\n- \u202eevil\u0000"
    )
    model = "evil\x1b[2J\nmodel"
    recs = [
        {"question_id": "q", "subset": "s", "model": model, "text": hostile},
        {"question_id": "q", "subset": "s", "model": "ok", "text": COMPLETE},
        {"question_id": "q", "subset": "s", "model": "ok2", "text": COMPLETE},
    ]
    started = time.perf_counter()
    scored = score_outputs(read_outputs([_jsonl(tmp_path / "h.jsonl", recs)]))
    assert time.perf_counter() - started < 20  # linear-time parsing, no regex blow-up
    assert scored.outputs.texts[(0, 0)] == hostile
    p = parse_response(hostile)
    assert p.steps[0] == "{__import__('os').system('echo pwned')}"
    doc = rank_outputs(scored, method="mca")
    assert {m["model"] for m in doc["models"]} == {model, "ok", "ok2"}
    files = write_rank_outputs(doc, tmp_path / "out")
    written = files[0].read_text(encoding="utf-8")
    assert "\x1b" not in written
    assert "evil␛[2J␤model" in written


def test_lm_eval_log_samples(tmp_path: Path) -> None:
    for model, answer in (("model-a", "18"), ("model-b", "20")):
        folder = tmp_path / "run" / model
        folder.mkdir(parents=True)
        recs = [
            {
                "doc_id": 0,
                "doc": {"question": "Q?"},
                "target": "18",
                "filter": f,
                "resps": [[structured(answer, ["a b c", "b c d", "c d e"], ["a b", "c d", "d e"])]],
                "filtered_resps": [answer],
                "metrics": ["exact_match"],
                "exact_match": 1,
            }
            for f in ("strict-match", "flexible-extract")
        ]
        _jsonl(folder / "samples_gsm8k_2024-01-01T00-00-00.jsonl", recs)
    out = read_outputs([tmp_path / "run"])
    assert out.models == ["model-a", "model-b"]
    assert out.questions == ["gsm8k/0"]
    assert out.subsets == ["gsm8k"]
    assert out.gold == {0: "18"}
    doc = rank_outputs(score_outputs(out), method="reasonerrank")
    acc = {m["model"]: m["accuracy"] for m in doc["models"]}
    assert acc == {"model-a": 1.0, "model-b": 0.0}


# ---------------------------------------------------------------------------
# the demo and the JSON document
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_doc() -> dict[str, object]:
    path = bundled_studies_dir() / "demo" / "reasoning" / "outputs.jsonl"
    return rank_outputs(score_outputs(read_outputs([path])))


def test_demo_ranks_with_reasonerrank(demo_doc: dict[str, object]) -> None:
    models = demo_doc["models"]
    assert isinstance(models, list)
    assert len(models) == 12
    assert demo_doc["k"] == 6
    assert [s["subset"] for s in demo_doc["subsets"]] == [
        "arithmetic",
        "conversions",
        "word-puzzles",
    ]  # type: ignore[index, union-attr]
    for m in models:
        assert set(m) >= {"model", "score", "initial_rank", "rank", "penalty", "consistency"}
    assert models[0]["model"] == "Walrus-120B"  # the most accurate demo model
    ev = demo_doc["evaluation"]
    assert isinstance(ev, dict)
    # the re-ranked ranking is closer to accuracy than random (0.54 for 12 models)
    assert ev["rbo"] > ev["random_expectation"]["rbo"] + 0.2
    json.dumps(demo_doc, allow_nan=False)


def test_demo_baselines_and_k(demo_doc: dict[str, object]) -> None:
    path = bundled_studies_dir() / "demo" / "reasoning" / "outputs.jsonl"
    scored = score_outputs(read_outputs([path]))
    mca = rank_outputs(scored, method="mca")
    full = rank_outputs(scored, method="reasonerrank", k=12)
    # K = 12 is the majority vote with pi_0 breaking ties (the exact identity is tested in
    # tests/ranking); MCA alone breaks them by model order, so only the K is checked here
    assert full["k"] == 12
    assert mca["k"] is None
    assert mca["models"][0]["initial_rank"] is None
    for method in ("selfrank-gtr", "selfrank-ftr"):
        assert len(rank_outputs(scored, method=method)["models"]) == 12
    with pytest.raises(AnnotateError, match=r"outside 1\.\.12"):
        rank_outputs(scored, k=13)


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------


def test_compare_reads_rank_json_rate_json_and_csv(
    tmp_path: Path, demo_doc: dict[str, object]
) -> None:
    (tmp_path / "rr.json").write_text(json.dumps(demo_doc), encoding="utf-8")
    files = write_rank_outputs(demo_doc, tmp_path / "out")
    rate = {
        "models": [
            {"model": m["model"], "rating": 1000 - 10 * i, "rank": i + 1}
            for i, m in enumerate(demo_doc["models"])
        ]
    }  # type: ignore[arg-type]
    (tmp_path / "rate.json").write_text(json.dumps(rate), encoding="utf-8")
    assert read_ranking_file(files[0]).score_key == "score"
    assert read_ranking_file(tmp_path / "rate.json").score_key == "rating"
    doc = compare_rankings([tmp_path / "rr.json", files[0], tmp_path / "rate.json"])
    assert len(doc["pairs"]) == 3
    for pair in doc["pairs"]:
        assert pair["rbo"] == pytest.approx(1.0)
        assert pair["sp_at_k"] == 1.0
        assert pair["kendall"] > 0.98  # tau-b: ReasonerRank ties some scores, rate does not
        assert set(pair) >= {"a", "b", "kendall", "spearman", "rbo", "rbo_weighted", "sp_at_k"}
    assert doc["random_expectation"]["rbo"] == pytest.approx(13 / 24)
    assert doc["random_expectation"]["sp_at_k"] == pytest.approx(3 / 12)
    json.dumps(doc, allow_nan=False)


def test_compare_against_reference_with_partial_overlap(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(
        "rank,model,score\n1,x,3\n2,y,2\n3,z,1\n4,w,0\n", encoding="utf-8"
    )
    (tmp_path / "ref.csv").write_text("model,rank\nz,1\ny,2\nx,3\n", encoding="utf-8")
    doc = compare_rankings(
        [tmp_path / "a.csv"], reference=tmp_path / "ref.csv", metrics=["rbo", "sp@2"]
    )
    (pair,) = doc["pairs"]
    assert pair["n"] == 3
    assert pair["dropped"] == ["w"]
    assert pair["rbo"] == pytest.approx((0 + 0.5 + 1) / 3)
    assert pair["sp_at_k"] == 0.5
    assert "kendall" not in pair
    with pytest.raises(AnnotateError, match="unknown metric"):
        compare_rankings([tmp_path / "a.csv", tmp_path / "ref.csv"], metrics=["nope"])
    (tmp_path / "bad.csv").write_text("model,score\nx,notanumber\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=r"bad\.csv:2: field 'score'"):
        compare_rankings([tmp_path / "a.csv", tmp_path / "bad.csv"])


def test_parsed_response_is_frozen() -> None:
    p = ParsedResponse("a", (), (), "")
    with pytest.raises(AttributeError):
        p.answer = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    "module", ["annotate.services.reasoning", "annotate.services.text_encoders"]
)
def test_module_doctests(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_arena_study_responses_as_outputs(tmp_path: Path) -> None:
    from annotate.errors import StudyNotFoundError
    from annotate.services.db import open_store
    from annotate.services.reasoning import study_outputs

    engine = open_store(tmp_path / "v.db", seed_demo=True)
    out = study_outputs(engine, "demo-arena")
    assert sorted(out.models) == ["Aurora-13B", "Basalt-2", "Cinder-Lite", "Drift-70B"]
    assert len(out.questions) == 16
    # subsets are the prompts' categories (question_pairs/demo/arena/prompts.jsonl)
    prompts = [
        json.loads(line)
        for line in (bundled_studies_dir() / "demo" / "arena" / "prompts.jsonl")
        .read_text("utf-8")
        .splitlines()
        if line.strip()
    ]
    category = {p["id"]: p["category"] for p in prompts}
    assert out.subsets == [category[q] for q in out.questions]
    assert len(set(out.subsets)) == 8
    assert not out.gold
    doc = rank_outputs(score_outputs(out))
    assert doc["evaluation"] is None
    assert len(doc["models"]) == 4
    assert len(doc["subsets"]) == 8
    assert any("categories" in n for n in doc["notes"])
    one = study_outputs(engine, "demo-arena", one_subset=True)
    assert set(one.subsets) == {"demo-arena"}
    assert one.questions == out.questions
    assert len(rank_outputs(score_outputs(one))["subsets"]) == 1
    with pytest.raises(AnnotateError, match="is a difficulty study"):
        study_outputs(engine, "demo-difficulty")
    with pytest.raises(StudyNotFoundError):
        study_outputs(engine, "nope")


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------


_PART = (
    st.text(
        alphabet=st.characters(
            whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters=" ,;'()?=%$"
        ),
        min_size=1,
        max_size=40,
    )
    .map(lambda s: " ".join(s.split()))
    .filter(
        lambda s: (
            bool(s)
            and not s.lower().startswith(
                (
                    "step",
                    "answer",
                    "reasoning",
                    "supporting",
                    "evidence",
                    "conclusion",
                    "final",
                    "direct",
                )
            )
        )
    )
)


@settings(max_examples=80, deadline=None)
@given(
    _PART,
    st.lists(_PART, min_size=0, max_size=5),
    st.lists(_PART, min_size=0, max_size=5),
    _PART,
)
def test_render_then_parse_round_trips(
    answer: str, steps: list[str], evidence: list[str], conclusion: str
) -> None:
    p = parse_response(structured(answer, steps, evidence, conclusion))
    assert p.answer == answer
    assert list(p.steps) == steps
    assert list(p.evidence) == evidence
    assert p.conclusion == conclusion
    expected = max(0, 3 - len(steps)) + max(0, 3 - len(evidence))
    assert response_penalty(p) == expected


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_within_bounds(text: str) -> None:
    p = parse_response(text)
    assert 0.0 <= response_penalty(p) <= 8.0
    assert all(s.strip() for s in (*p.steps, *p.evidence))
    normalize_answer(p.answer)
    normalize_answer(p.answer, kind="number")
    normalize_answer(p.answer, choices=["a", "b"])


def test_compare_question_rankings_human_scale_style(tmp_path: Path) -> None:
    (tmp_path / "human_scale.csv").write_text(
        "question,subject,human_difficulty,eip\nq1,s,3.0,1\nq2,s,,2\nq3,s,1.0,3\nq4,s,2.0,4\n",
        encoding="utf-8",
    )
    (tmp_path / "eip_questions.csv").write_text(
        "rank,question,difficulty\n1,q1,0.9\n2,q4,0.5\n3,q3,0.1\n4,q2,0.0\n", encoding="utf-8"
    )
    hs = read_ranking_file(tmp_path / "human_scale.csv")
    assert hs.models == ["q1", "q3", "q4"]  # q2 has no human difficulty
    assert hs.score_key == "human_difficulty"
    doc = compare_rankings([tmp_path / "human_scale.csv", tmp_path / "eip_questions.csv"])
    (pair,) = doc["pairs"]
    assert pair["n"] == 3
    assert pair["dropped"] == ["q2"]
    assert pair["kendall"] == pytest.approx(1.0)


def test_evaluation_leaves_out_subsets_without_gold(tmp_path: Path) -> None:
    recs = []
    for subset, gold in (("graded", "B"), ("open", None)):
        for q in range(2):
            for model, ans in (("m1", "B"), ("m2", "C"), ("m3", "B")):
                rec: dict[str, object] = {
                    "question_id": f"{subset}{q}",
                    "subset": subset,
                    "model": model,
                    "text": structured(ans, ["a b c", "b c d", "c d e"], ["a b", "c d", "e f"]),
                }
                if gold:
                    rec["gold"] = gold
                recs.append(rec)
    doc = rank_outputs(score_outputs(read_outputs([_jsonl(tmp_path / "g.jsonl", recs)])))
    ev = doc["evaluation"]
    assert ev["subsets_with_gold"] == 1
    assert "left out of the evaluation" in " ".join(doc["notes"])
    open_rows = next(s for s in doc["subsets"] if s["subset"] == "open")["models"]
    assert all(r["accuracy"] is None for r in check_json(open_rows))
    json.dumps(check_json(doc), allow_nan=False)


def test_readme_shows_the_fixed_prompt_verbatim() -> None:
    """The README's copy of the prompt (what a lead gives the models) is the code's."""
    from annotate.services.reasoning import FIXED_PROMPT

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    start = readme.index("```text\n", readme.index("- **Prompt.**")) + len("```text\n")
    block = readme[start : readme.index("  ```\n", start)]
    text = "".join(line[2:] + "\n" for line in block.splitlines())
    assert text == FIXED_PROMPT
