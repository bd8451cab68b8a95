"""``ranking``'s public names are imported on first use (PEP 562 ``__getattr__``).

Each test runs in a fresh interpreter, since this process has long imported every
submodule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return out.stdout


def test_import_ranking_loads_few_submodules() -> None:
    """``import ranking`` alone imports neither the statistics nor scipy."""
    loaded = _run(
        "import sys, ranking; print('\\n'.join(m for m in sys.modules "
        "if m.startswith(('ranking.', 'scipy'))))"
    ).split()
    for heavy in ("ranking.arena", "ranking.simulation", "ranking.irt", "ranking.agreement"):
        assert heavy not in loaded
    assert not [m for m in loaded if m.startswith("scipy")]


def test_every_public_name_resolves_to_its_submodule_object() -> None:
    """``ranking.X``, ``from ranking import X`` and ``from ranking import *`` give, for
    each name of ``__all__``, the very object its submodule defines."""
    out = _run(
        "import importlib, ranking\n"
        "bad = []\n"
        "for n in ranking.__all__:\n"
        "    mod = importlib.import_module('ranking.' + ranking._SOURCE[n])\n"
        "    if getattr(ranking, n) is not getattr(mod, n): bad.append(n)\n"
        "    ns = {}\n"
        "    exec(f'from ranking import {n}', ns)\n"
        "    if ns[n] is not getattr(mod, n): bad.append(n)\n"
        "star = {}\n"
        "exec('from ranking import *', star)\n"
        "bad += [n for n in ranking.__all__ if n not in star]\n"
        "print(len(ranking.__all__), bad)\n"
    )
    assert out.split(" ", 1)[1].strip() == "[]"
    assert int(out.split(" ", 1)[0]) >= 130


def test_names_shared_with_submodules_stay_functions() -> None:
    """``eip`` and ``reasoner_rank`` name both a function and its submodule: the package
    attribute is the function, also after the submodule is imported elsewhere."""
    out = _run(
        "import ranking.eip, ranking.reasoner_rank, ranking\n"
        "from ranking import eip, reasoner_rank\n"
        "print(callable(eip), callable(reasoner_rank), type(ranking.eip).__name__)\n"
    )
    assert out.split() == ["True", "True", "function"]


def test_submodules_as_attributes_and_unknown_names() -> None:
    """``ranking.arena`` is the submodule (imported on first use); an unknown name raises
    AttributeError, as a plain module does."""
    out = _run(
        "import ranking\n"
        "print(ranking.graph.__name__, hasattr(ranking, 'no_such_name'), "
        "hasattr(ranking, '__wrapped__'))\n"
    )
    assert out.split() == ["ranking.graph", "False", "False"]
