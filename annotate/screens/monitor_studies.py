"""The monitor's study picker: a modal list of the studies with their vote counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, OptionList
from textual.widgets.option_list import Option

from annotate.widgets.literal import literal_line

if TYPE_CHECKING:
    from annotate.views import StudyListing


class StudyPickerScreen(ModalScreen[str | None]):
    """Pick the study to monitor; dismisses with its name, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Back", tooltip="Keep monitoring the same study.", id="back"),
    ]

    def __init__(self, studies: Sequence[StudyListing], current: str | None) -> None:
        super().__init__()
        self.studies = list(studies)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Label("Monitor which study?", id="picker-title")
            options = []
            for st in self.studies:
                line = literal_line(st.name, style="bold")
                line.append(f"  {st.kind} · {st.votes} votes · {st.annotators} annotators")
                if st.title:
                    line.append("\n")
                    line.append(literal_line(st.title))
                options.append(Option(line, id=st.name))
            if not options:
                options.append(Option(Text("The database has no studies."), disabled=True))
            yield OptionList(*options, id="studies")
        yield Footer()

    def on_mount(self) -> None:
        names = [st.name for st in self.studies]
        option_list = self.query_one(OptionList)
        if self.current in names:
            option_list.highlighted = names.index(self.current)
        option_list.focus()

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
