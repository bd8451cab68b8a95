"""Names and labels drawn in the PNG plots (``annotate report``, ``analyze``, ``rate
--paper``) show control characters as placeholders the plots' font can draw, so a
hostile name is visible as what it was, not an empty box, and matplotlib prints no
missing-glyph warning on the user's terminal."""

from __future__ import annotations

import warnings

import pytest
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font

from annotate.names import one_line, plot_text

HOSTILE = "".join(map(chr, range(0x20))) + "\x7f" + "a\u202eb\u2028c\x85d"


def test_every_placeholder_is_in_the_plot_font() -> None:
    charmap = FT2Font(font_manager.findfont("DejaVu Sans")).get_charmap()
    text = plot_text(HOSTILE)
    assert {ch for ch in text if ord(ch) not in charmap} == set()
    assert "⟨U+001B⟩" in text
    assert "⟨U+000A⟩" in text
    # the same text as one_line shows in the terminal, only the pictures spelled out
    assert plot_text("plain model-7B $x$") == one_line("plain model-7B $x$")


@pytest.mark.parametrize("label", [HOSTILE, "gpt\x1b]0;pwned\x07"])
def test_drawing_a_hostile_label_warns_nothing(label: str) -> None:
    fig = Figure(figsize=(3, 2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], label=plot_text(label))
    ax.set_xticks([0, 1], [plot_text(label), "b"])
    ax.legend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.canvas.draw()
