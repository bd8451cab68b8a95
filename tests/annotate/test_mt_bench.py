"""MT-bench human judgments: one question judged across several model pairs, in both
orders, over two turns, by several judges (issue 12, "Real inputs").

``tests/data/mt_bench_human_judgments.jsonl`` is written in the exact layout of the public
MT-bench human judgments (``question_id, model_a, model_b, winner, judge, conversation_a,
conversation_b, turn``; conversations as lists of ``{"role", "content"}``): three MT-bench
questions (81, 101, 113), two turns, four models, five pairs per question and turn, two or
three judges per battle, the order of each pair drawn per record. The questions are
MT-bench's; the answers and votes are made up (seeded), and claude-v1's answers to
question 113 name their maker, so that self-identification detection has something to find.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sqlmodel import Session

from annotate.cli import main
from annotate.errors import InputFileError
from annotate.services import formats
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.store import repo
from ranking.agreement import krippendorff_alpha

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "mt_bench_human_judgments.jsonl"


def records() -> list[dict]:
    return [json.loads(x) for x in FIXTURE.read_text(encoding="utf-8").splitlines()]


def write_jsonl(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def conv(turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    out = []
    for q, a in turns:
        out += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return out


def rec(qid: int, a: str, b: str, winner: str, judge: str, turn: int = 1) -> dict:
    qs = [("Q1 text", "Q2 text")]
    ans = {m: (f"{m} answer 1", f"{m} answer 2") for m in (a, b)}
    return {
        "question_id": qid,
        "model_a": a,
        "model_b": b,
        "winner": winner,
        "judge": judge,
        "conversation_a": conv([(qs[0][t], ans[a][t]) for t in range(turn)]),
        "conversation_b": conv([(qs[0][t], ans[b][t]) for t in range(turn)]),
        "turn": turn,
    }


def test_the_fixture_has_the_mt_bench_layout() -> None:
    recs = records()
    assert all(
        list(r)
        == [
            "question_id",
            "model_a",
            "model_b",
            "winner",
            "judge",
            "conversation_a",
            "conversation_b",
            "turn",
        ]
        for r in recs
    )
    pairs = {(r["question_id"], r["turn"], frozenset((r["model_a"], r["model_b"]))) for r in recs}
    ordered = {(r["question_id"], r["turn"], r["model_a"], r["model_b"]) for r in recs}
    assert len(ordered) > len(pairs)  # some pairs come in both orders
    per_question = Counter((q, t) for q, t, _ in pairs)
    assert min(per_question.values()) >= 2  # several pairs per question and turn
    assert {r["turn"] for r in recs} == {1, 2}
    assert len({r["judge"] for r in recs}) >= 4
    assert {r["winner"] for r in recs} == {"model_a", "model_b", "tie", "tie (bothbad)"}


def test_swapped_pair_is_the_same_battle_with_the_choice_mirrored(tmp_path: Path) -> None:
    f = write_jsonl(
        tmp_path / "mt.jsonl",
        [
            rec(81, "gpt-4", "claude-v1", "model_a", "author_0"),
            rec(81, "claude-v1", "gpt-4", "model_b", "expert_12"),  # gpt-4 again, swapped
            rec(81, "gpt-4", "vicuna-13b", "tie (bothbad)", "author_0"),
            rec(81, "claude-v1", "gpt-4", "tie", "expert_27", turn=2),
        ],
    )
    parsed = formats.parse_chatbot_arena(f, "mt")
    assert parsed.battles == {
        "81#1:claude-v1:gpt-4": ("gpt-4", "claude-v1", 1),
        "81#1:gpt-4:vicuna-13b": ("gpt-4", "vicuna-13b", 3),
        "81#2:claude-v1:gpt-4": ("claude-v1", "gpt-4", 4),
    }
    v = parsed.votes
    assert [(x.item_key, x.choice, x.swapped) for x in v[:2]] == [
        ("81#1:claude-v1:gpt-4", "model_a", False),
        ("81#1:claude-v1:gpt-4", "model_a", True),
    ]
    assert v[2].choice == "both_bad"

    engine = open_store(tmp_path / "t.db")
    rep = import_paths(engine, [f], study="mt")
    assert (rep.items_added, rep.votes_added) == (3, 4)
    with Session(engine) as s:
        sid = repo.get_study(s, "mt").id
        items = repo.item_ids(s, sid)
        view = repo.battle_view(s, items["81#1:claude-v1:gpt-4"])
        assert (view.prompt, view.response_a, view.response_b) == (
            "Q1 text",
            "gpt-4 answer 1",
            "claude-v1 answer 1",
        )
        turn2 = repo.battle_view(s, items["81#2:claude-v1:gpt-4"])
        assert turn2.prompt == "[turn 1]\nQ1 text\n\n[turn 2]\nQ2 text"
        assert turn2.response_a == "[turn 1]\nclaude-v1 answer 1\n\n[turn 2]\nclaude-v1 answer 2"
        votes = sorted(
            (r[3], r[4], r[5], r[6]) for r in repo.vote_records(s, sid, current_only=True)
        )
    assert votes == [
        ("author_0", "81#1:claude-v1:gpt-4", "model_a", "model_a"),
        ("author_0", "81#1:gpt-4:vicuna-13b", "both_bad", "model_a"),
        ("expert_12", "81#1:claude-v1:gpt-4", "model_a", "model_b"),  # shown swapped
        ("expert_27", "81#2:claude-v1:gpt-4", "tie", "model_a"),
    ]


def test_the_fixture_imports_rates_and_shows_agreement(tmp_path: Path, capsys) -> None:
    db = tmp_path / "t.db"
    assert main(["import", "--db", str(db), str(FIXTURE), "--study", "mt-bench"]) == 0
    out = capsys.readouterr().out
    assert "added 30 items, 78 votes" in out
    assert "6 battle(s) with a response that names a model" in out  # claude-v1 on 113
    engine = open_store(db)
    with Session(engine) as s:
        sid = repo.get_study(s, "mt-bench").id
        views = [repo.battle_view(s, i) for i in repo.item_ids(s, sid).values()]
    assert all(v.prompt and v.response_a and v.response_b for v in views)

    assert main(["rate", "--db", str(db), "--study", "mt-bench", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["models"][0]["model"] == "gpt-4"
    assert doc["excluded_self_identifying"] == 6
    ag = doc["agreement"]
    assert ag["shared_battles"] > 0
    assert ag["annotators_on_shared"] >= 4
    assert 0 < ag["pairwise_agreement"] < 1
    assert all(a["majority_agreement"] is not None for a in doc["annotators"])

    assert main(["rate", "--db", str(db), "--study", "mt-bench"]) == 0
    assert "agreement: 24 battle(s) judged by two or more annotators" in capsys.readouterr().out

    # importing the same file again, or with the records in the other order, adds nothing
    for recs in (records(), records()[::-1]):
        again = import_paths(
            engine, [write_jsonl(tmp_path / "again.jsonl", recs)], study="mt-bench"
        )
        assert (again.items_added, again.votes_added, again.votes_skipped) == (0, 0, 78)


def test_agreement_block_is_krippendorff_alpha_on_shared_battles(capsys) -> None:
    assert main(["rate", str(FIXTURE), "--json"]) == 0
    ag = json.loads(capsys.readouterr().out)["agreement"]
    label = {"model_a": 2.0, "model_b": 0.0, "tie": 1.0, "both_bad": 3.0}
    parsed = formats.parse_chatbot_arena(FIXTURE, "x")
    judges = sorted({v.annotator for v in parsed.votes})
    keys = sorted(parsed.battles)
    data = np.full((len(judges), len(keys)), np.nan)
    for v in parsed.votes:
        data[judges.index(v.annotator), keys.index(v.item_key)] = label[v.choice]
    expected = krippendorff_alpha(data, level="nominal")
    assert ag["shared_battles"] == expected.n_units == 30
    assert ag["krippendorff_alpha"] == pytest.approx(expected.value, abs=1e-12)


def test_csv_with_json_conversations_imports_the_same(tmp_path: Path) -> None:
    recs = records()
    f = tmp_path / "mt.csv"
    with f.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(recs[0]))
        w.writeheader()
        for r in recs:
            w.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()})
    a = formats.parse_chatbot_arena(f, "s")
    b = formats.parse_chatbot_arena(FIXTURE, "s")
    assert {k: v[:2] for k, v in a.battles.items()} == {k: v[:2] for k, v in b.battles.items()}
    assert a.prompts.keys() == b.prompts.keys()
    assert {k: t for k, (t, _) in a.responses.items()} == {
        k: t for k, (t, _) in b.responses.items()
    }
    assert [(v.uuid, v.choice, v.swapped) for v in a.votes] == [
        (v.uuid, v.choice, v.swapped) for v in b.votes
    ]


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        ({"conversation_a": "not json"}, "mt.jsonl:2: field 'conversation_a'", "JSON list"),
        ({"conversation_b": [{"role": "user"}]}, "mt.jsonl:2: field 'conversation_b'", "role"),
        (
            {"conversation_a": conv([("Q1 text", "other answer")])},
            "mt.jsonl:2: field 'conversation_a'",
            "differs from the one on line 1",
        ),
        ({"turn": 3}, "mt.jsonl:2: field 'conversation_a'", "3 user turn(s)"),
        ({"model_a": "gpt-4"}, "mt.jsonl:2: field 'model_b'", "against itself"),
    ],
)
def test_bad_records_are_refused_in_one_line(
    tmp_path: Path, change: dict, where: str, message: str
) -> None:
    second = rec(81, "claude-v1", "gpt-4", "model_b", "expert_12") | change
    f = write_jsonl(tmp_path / "mt.jsonl", [rec(81, "gpt-4", "claude-v1", "model_a", "a"), second])
    engine = open_store(tmp_path / "t.db")
    with pytest.raises(InputFileError) as err:
        import_paths(engine, [f], study="mt")
    text = str(err.value)
    assert where in text, text
    assert message in text, text
    assert "\n" not in text
    with Session(engine) as s:
        assert repo.get_study(s, "mt") is None  # nothing written


def test_the_same_judge_twice_on_a_battle_in_either_order_is_refused(tmp_path: Path) -> None:
    f = write_jsonl(
        tmp_path / "mt.jsonl",
        [rec(81, "gpt-4", "claude-v1", "model_a", "j"), rec(81, "claude-v1", "gpt-4", "tie", "j")],
    )
    with pytest.raises(InputFileError, match="votes on battle '81#1:claude-v1:gpt-4' again"):
        formats.parse_chatbot_arena(f, "mt")
