"""The report screen, mounted in a tiny app: the service's numbers, literally, in DataTables."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from textual.app import App
from textual.widgets import DataTable, Static, TabbedContent

from annotate.screens.report import ReportScreen
from annotate.services.db import open_store
from annotate.services.importing import import_paths
from annotate.services.report import human_alignment_report, pct, report_view
from tests.annotate.conftest import settle
from tests.annotate.test_report import VOTES, cast, make_study


class ReportApp(App[None]):
    """Pushes one report screen; ``use_app_loader`` exercises ``app.load_report``."""

    def __init__(self, engine: Engine, study: str, *, use_app_loader: bool = False) -> None:
        super().__init__()
        self.engine = engine
        self.study = study
        self.use_app_loader = use_app_loader
        self.errors: list[Any] = []

    def load_report(self, study: str) -> Any:
        return report_view(self.engine, study, n_boot=50)

    def on_mount(self) -> None:
        load = None if self.use_app_loader else self.load_report
        self.push_screen(ReportScreen(self.study, load=load))


def rows(app: App[None], table_id: str) -> list[list[str]]:
    dt = app.screen.query_one(f"#{table_id}", DataTable)
    return [[c.plain for c in dt.get_row_at(i)] for i in range(dt.row_count)]


def status(app: App[None]) -> str:
    return str(app.screen.query_one("#report-status", Static).render())


@pytest.fixture
def study_engine(tmp_path: Path) -> Engine:
    engine = open_store(tmp_path / "v.db")
    import_paths(engine, [make_study(tmp_path / "studies")])
    return engine


async def test_screen_shows_the_service_numbers(study_engine: Engine) -> None:
    cast(study_engine, "hand", VOTES)
    app = ReportApp(study_engine, "hand")
    seen: list[Any] = []
    async with app.run_test(size=(140, 45), message_hook=seen.append) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        assert screen.view is not None
        assert any(isinstance(m, ReportScreen.Loaded) for m in seen)
        rep = human_alignment_report(study_engine, "hand", n_boot=50)
        table = rows(app, "table-alignment")
        assert [r[0] for r in table] == ["EIP", "Simple Rank", "1PL-IRT", "2PL-IRT", "MIRT"]
        for r, m in zip(table, rep.alignment, strict=True):
            assert r[1] == pct(m.consensus.value)
            header = app.screen.query_one("#table-alignment", DataTable).ordered_columns
            at = [str(c.label) for c in header].index("pairs")
            assert r[at] == str(m.pairs)
        individual = rows(app, "table-individual")
        assert [r[0] for r in individual] == ["a1", "a2", "a3"]  # names are stored normalised
        agreement = rows(app, "table-agreement")
        assert agreement[2][0] == "Krippendorff's alpha (nominal)"
        assert agreement[2][1] == f"{rep.agreement.krippendorff_alpha.value:.3f}"
        summary = str(screen.query_one("#report-summary", Static).render())
        assert "touched 1 pair(s)" in summary
        # the other tabs hold the agreement and near-tie tables
        tabs = screen.query_one(TabbedContent)
        tabs.active = "tab-near-ties"
        await pilot.pause()
        assert rows(app, "table-near_ties")[0][0] == "p2"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ReportScreen)


async def test_annotator_names_are_shown_literally(study_engine: Engine) -> None:
    names = ["[bold]V1[/bold]", "red \x1b[31m", "[link=http://x]x[/link]"]
    # The importers now refuse such annotator names; a database written before that
    # rule may still hold them, so they are stored directly, as it would.
    with sqlite3.connect(study_engine.url.database) as con:
        con.executemany(
            "INSERT INTO annotator (name, created_at) VALUES (?, ?)",
            [(n, "2026-01-01 00:00:00") for n in names],
        )
    cast(study_engine, "hand", dict(zip(names, VOTES.values(), strict=True)), raw_names=True)
    app = ReportApp(study_engine, "hand")
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        shown = [r[0] for r in rows(app, "table-individual")]
        assert "[bold]V1[/bold]" in shown
        assert "[link=http://x]x[/link]" in shown
        assert "red ␛[31m" in shown


async def test_no_votes_says_undefined(study_engine: Engine) -> None:
    app = ReportApp(study_engine, "hand", use_app_loader=True)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        first = rows(app, "table-alignment")[0]
        assert first[1].startswith("undefined: there are no votes")
        agreement = rows(app, "table-agreement")
        assert agreement[0][1].startswith("undefined: ")


async def test_failure_is_shown_and_the_app_goes_on(study_engine: Engine) -> None:
    app = ReportApp(study_engine, "no-such-study")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ReportScreen)
        text = status(app)
        assert "could not be computed" in text
        assert "no study named 'no-such-study'" in text
        assert app.screen.view is None
