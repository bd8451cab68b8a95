"""The report command's glibc malloc settings (annotate.cli.report._keep_heap): both
thresholds, or neither when the mmap threshold is refused (a trim threshold alone turns
glibc's adaptive thresholds off and leaves blocks of 128 kB and up mapped one by one)."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

import annotate.cli.report as report_cli


class _Libc:
    def __init__(self, accept_mmap: bool) -> None:
        self.calls: list[tuple[int, int]] = []
        self.accept_mmap = accept_mmap

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return 1 if (param != -3 or self.accept_mmap) else 0


@pytest.mark.parametrize("accept", [True, False])
def test_the_trim_threshold_is_set_only_with_the_mmap_threshold(
    monkeypatch: pytest.MonkeyPatch, accept: bool
) -> None:
    libc = _Libc(accept)

    def cdll(name: Any) -> _Libc:
        assert name is None  # the process's own C library
        return libc

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    report_cli._keep_heap()
    m_trim, m_mmap = -1, -3  # glibc's malloc.h
    if accept:
        assert libc.calls == [
            (m_mmap, report_cli.MMAP_THRESHOLD),
            (m_trim, report_cli.TRIM_THRESHOLD),
        ]
    else:
        assert libc.calls == [(m_mmap, report_cli.MMAP_THRESHOLD)]


def test_no_c_library_by_name_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def cdll(name: Any) -> Any:
        raise OSError("no C library")

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    report_cli._keep_heap()  # nothing set, nothing raised
