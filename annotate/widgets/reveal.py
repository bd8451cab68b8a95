"""The line that names the models of the annotator's last vote (arena studies that reveal them)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Label

from annotate.widgets.literal import literal_line


class RevealLine(Label):
    """``Your last vote: A was X, B was Y``, hidden until the first reveal.

    Not a toast, which would cover the next item. Model names come from files:
    they go through :func:`annotate.names.one_line`, so no escape sequence in a
    name reaches the terminal.
    """

    DEFAULT_CSS = """
    RevealLine { display: none; width: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)

    def show(self, left: str, right: str) -> None:
        """Name the models shown as A (``left``) and B (``right``) in the last vote."""
        line = Text("Your last vote: A was ")
        line.append_text(literal_line(left, style="bold"))
        line.append(", B was ")
        line.append_text(literal_line(right, style="bold"))
        self.update(line)
        self.display = True
