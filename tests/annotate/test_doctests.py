"""The doctests of annotate's dependency-light modules run in the test command too.

``testpaths`` collects doctests of ``ranking`` only; these modules' examples state the
name rules and the path check, so they must not drift from the code.
"""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "annotate.names",
        "annotate.services.paths",
        "annotate.services.identity",
        "annotate.choices",
        "annotate.study_settings",
    ],
)
def test_module_doctests(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
