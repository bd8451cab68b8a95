"""mypy --strict (the [tool.mypy] settings of pyproject.toml) is clean on annotate and ranking.

mypy is in the test dependency group, so the README's test command runs this check.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mypy_strict_is_clean_on_annotate_and_ranking() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "-p", "annotate", "-p", "ranking"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
