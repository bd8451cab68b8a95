"""The first screen: the annotator's name, then the studies with their progress."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.suggester import SuggestFromList
from textual.widgets import Footer, Input, Label, OptionList
from textual.widgets.option_list import Option

from annotate.names import one_line
from annotate.services.settings import last_annotator, remember_annotator
from annotate.views import StudyProgress
from annotate.widgets.literal import LiteralText, literal_line

INTRO = (
    "Blind comparison of questions and answers. You will see two items at a time and pick "
    "one with a single key; every vote is saved at once, and you can stop and resume at "
    "any time."
)
STEP_2 = "2. Choose a study (↑/↓ to move, Enter to start)"
KIND_HELP = {
    "difficulty": "which of two questions is harder",
    "arena": "which of two answers is better",
}


ListStudies = Callable[[str | None], Sequence[StudyProgress]]
"""Lists the studies with one annotator's progress (runs in a worker thread; the app's is
:func:`annotate.services.voting.study_progress`)."""


class WelcomeHost(Protocol):
    """What the welcome screen asks of the app."""

    annotator: str | None
    initial_study: str | None

    def open_study(self, study: str) -> None: ...
    def exit(self) -> None: ...


def study_option(row: StudyProgress) -> Option:
    """One study: its title, then name, kind and the annotator's progress."""
    text = Text()
    text.append_text(literal_line(row.title or row.name, style="bold"))
    text.append("\n  ")
    text.append_text(literal_line(row.name))
    text.append(f" · {KIND_HELP.get(row.kind, row.kind)} · ")
    text.append(f"{row.done} / {row.total} done", style="bold" if row.done else "")
    return Option(text, id=row.name)


def valid_name(raw: str) -> str | None:
    """The annotator name typed, or None when it is unusable."""
    name = " ".join(raw.split())
    if not name or len(name) > 64 or not name.isprintable():
        return None
    return name


class WelcomeScreen(Screen[None]):
    """Type your name, press Enter, pick a study with the arrows, press Enter."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "back_or_quit",
            "Back / quit",
            tooltip="From the studies: back to the name. From the name: quit.",
            id="welcome-escape",
        ),
        Binding("f1", "app.help", "Help", tooltip="Show the keys.", id="welcome-help"),
    ]
    AUTO_FOCUS = "#name"

    def __init__(
        self,
        host: WelcomeHost,
        list_studies: ListStudies,
        known_names: Callable[[], list[str]] | None = None,
        *,
        fixed_name: bool = False,
    ) -> None:
        super().__init__()
        self.fixed_name = fixed_name
        """The name is the host's and cannot be changed (a browser link fixed it)."""
        self.host = host
        self.list_studies = list_studies
        self.known_names = known_names
        """Annotator names to offer as completions (names only; called in a thread)."""
        self.rows: dict[str, StudyProgress] = {}
        self.loaded = False
        """True once the study list has been shown (tests wait on it)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="welcome"):
            yield Label("annotate", id="app-title")
            yield Label(INTRO, id="intro")
            if self.fixed_name:
                yield Label("1. Your name (set by your link)")
                yield Input(value=self.host.annotator or "", id="name", disabled=True)
            else:
                yield Label("1. Your name (it keeps your votes apart; Enter to continue)")
                yield Input(
                    value=self.host.annotator or last_annotator(),
                    placeholder="type your name and press Enter (→ completes a known name)",
                    id="name",
                    max_length=64,
                )
            yield Label(STEP_2, id="step-2")
            yield OptionList(id="studies")
            yield LiteralText(id="study-description")
        yield Footer()

    def on_mount(self) -> None:
        if self.known_names is not None:
            self._load_names()

    @work(thread=True, exclusive=True, exit_on_error=False, group="welcome-names")
    def _load_names(self) -> None:
        assert self.known_names is not None
        names = [one_line(n) for n in self.known_names()]
        self.app.call_from_thread(self._offer_names, names)

    def _offer_names(self, names: list[str]) -> None:
        self.query_one("#name", Input).suggester = SuggestFromList(names, case_sensitive=False)

    def action_back_or_quit(self) -> None:
        if self.fixed_name:
            return  # no name to go back to (the link fixed it); q quits
        name_box = self.query_one("#name", Input)
        if self.focused is name_box:
            self.app.exit()
        else:
            name_box.focus()

    def on_screen_resume(self) -> None:
        if self.host.annotator and self.host.initial_study:
            return  # the study opens straight away; the list loads when this screen is back
        focus_list = not self.loaded and bool(self.host.annotator)
        if focus_list:  # back from a study opened with --study: the list, not the name box
            self._greet(self.host.annotator or "")
            self.query_one("#studies", OptionList).focus()  # keys typed meanwhile stay out
        self.reload(focus_list=focus_list)

    def _greet(self, name: str) -> None:
        self.query_one("#step-2", Label).update(
            Text(f"2. Hello {one_line(name)}! Choose a study (↑/↓ to move, Enter to start)")
        )

    def reload(self, *, focus_list: bool = False) -> None:
        """Refresh the study list and progress (in a thread: it counts votes)."""
        self._load(self.host.annotator, focus_list)

    @work(thread=True, exclusive=True, exit_on_error=False, group="welcome")
    def _load(self, annotator: str | None, focus_list: bool) -> None:
        rows = self.list_studies(annotator)
        self.app.call_from_thread(self._show, rows, focus_list)

    def _show(self, rows: Sequence[StudyProgress], focus_list: bool) -> None:
        self.rows = {r.name: r for r in rows}
        studies = self.query_one("#studies", OptionList)
        keep = None
        if studies.highlighted is not None and studies.option_count:
            keep = studies.get_option_at_index(studies.highlighted).id
        studies.clear_options()
        studies.add_options([study_option(r) for r in rows])
        names = [r.name for r in rows]
        if rows:
            studies.highlighted = names.index(keep) if keep in names else 0
        else:
            self.query_one("#study-description", LiteralText).set_text(
                "No studies yet. Quit and add one with: annotate import STUDY_FOLDER"
            )
        if focus_list:
            studies.focus()
        self.loaded = True

    @on(Input.Submitted, "#name")
    def name_entered(self, event: Input.Submitted) -> None:
        if self.fixed_name:
            return
        name = valid_name(event.value)
        if name is None:
            self.notify(
                "Type a name of 1 to 64 printable characters, then press Enter.",
                title="Name needed",
                severity="warning",
            )
            return
        self.host.annotator = name
        remember_annotator(name)
        self._greet(name)
        if self.host.initial_study:
            study, self.host.initial_study = self.host.initial_study, None
            self.host.open_study(study)
            return
        studies = self.query_one("#studies", OptionList)
        if studies.option_count:
            # the list already shows (its progress is refreshed for this name below): keys
            # typed from now on move in it, never back into the name box
            studies.focus()
        self.reload(focus_list=True)

    @on(OptionList.OptionHighlighted, "#studies")
    def study_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        row = self.rows.get(event.option.id or "")
        text = " ".join(row.description.split()) if row else ""
        self.query_one("#study-description", LiteralText).set_text(text)

    @on(OptionList.OptionSelected, "#studies")
    def study_selected(self, event: OptionList.OptionSelected) -> None:
        if self.fixed_name:
            self.host.open_study(event.option.id or "")
            return
        name = valid_name(self.query_one("#name", Input).value)
        if name is None:
            self.notify("Type your name first, then press Enter.", severity="warning")
            self.query_one("#name", Input).focus()
            return
        self.host.annotator = name
        remember_annotator(name)
        self.host.open_study(event.option.id or "")
