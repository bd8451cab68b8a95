"""``annotate report --resample``: which bootstrap scheme the intervals come from (issue 10).

The report's intervals default to the two-way bootstrap (pairs and annotators resampled
together; Owen 2007), shown with the one-way intervals beside it; ``--resample units`` or
``annotators`` runs that scheme alone. Every interval, the JSON and report.md name the scheme.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine

from annotate.cli import main
from annotate.services.report import human_alignment_report, write_report
from tests.annotate.test_report import hand_engine  # noqa: F401  (fixture)


def test_default_is_two_way_with_one_way_alongside(hand_engine: Engine, tmp_path: Path) -> None:  # noqa: F811
    rep = human_alignment_report(hand_engine, "hand", n_boot=60, seed=1)
    assert rep.resample == "both"
    g = rep.agreement
    for est in (g.krippendorff_alpha, g.fleiss_kappa_with_skips):
        assert est.both_interval is not None
        assert est.both_interval.scheme == "both"
        assert est.pairs_interval is not None
        assert est.pairs_interval.scheme == "units"
        assert est.annotators_interval is not None
        assert est.annotators_interval.scheme == "annotators"
    for m in rep.alignment:
        assert m.consensus.both_interval is not None
        assert m.consensus.both_interval.scheme == "both"
    doc = rep.as_dict()
    assert doc["resample"] == "both"
    assert "two-way" in doc["resample_label"]
    assert set(doc["alignment"][0]["consensus_ci"]) == {"pairs", "annotators", "both"}
    assert len(doc["alignment"][0]["consensus_ci"]["both"]) == 2
    written = write_report(rep, tmp_path / "out", plots=False)
    md = (written.folder / "report.md").read_text(encoding="utf-8")
    assert "CI both" in md
    assert "two-way" in md
    assert "Owen 2007" in md


@pytest.mark.parametrize(("scheme", "field"), [("units", "pairs"), ("annotators", "annotators")])
def test_one_way_scheme_alone(hand_engine: Engine, scheme: str, field: str) -> None:  # noqa: F811
    rep = human_alignment_report(hand_engine, "hand", n_boot=40, seed=2, resample=scheme)
    alpha = rep.agreement.krippendorff_alpha
    assert alpha.both_interval is None
    iv = alpha.pairs_interval if field == "pairs" else alpha.annotators_interval
    other = alpha.annotators_interval if field == "pairs" else alpha.pairs_interval
    assert iv is not None
    assert iv.scheme == scheme
    assert other is None
    assert rep.as_dict()["resample"] == scheme
    assert any(f"--resample {scheme}" in n for n in rep.notes)


def test_cli_resample_option(
    hand_engine: Engine,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = str(tmp_path / "v.db")
    argv = ["--db", db, "report", "--study", "hand", "--boot", "30", "--no-plots"]
    argv += ["--out", str(tmp_path / "o")]
    code = main([*argv, "--json", "--resample", "annotators"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["resample"] == "annotators"
    assert doc["agreement"]["krippendorff_alpha_ci"]["both"] is None
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "CI both" in out
    with pytest.raises(SystemExit):
        main([*argv, "--resample", "pairs"])
    _, err = capsys.readouterr()
    assert "invalid choice" in err
