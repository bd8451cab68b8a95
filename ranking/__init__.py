"""ranking: statistics for human evaluation of LLMs (numpy and scipy only).

Arrays in, plain results out. This package never touches files, databases or
the terminal, and never imports :mod:`annotate`.
"""

from __future__ import annotations

from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    LengthMismatchError,
    RankingInputError,
    ShapeError,
)

__all__ = [
    "ConvergenceError",
    "DegenerateDataError",
    "InvalidParameterError",
    "LengthMismatchError",
    "RankingInputError",
    "ShapeError",
]
