"""The report command's glibc malloc settings (annotate.cli.report._keep_heap): both
thresholds and one arena, or none when the mmap threshold is refused (a trim threshold alone turns
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
    m_trim, m_mmap, m_arena_max = -1, -3, -8  # glibc's malloc.h
    if accept:
        assert libc.calls == [
            (m_mmap, report_cli.MMAP_THRESHOLD),
            (m_trim, report_cli.TRIM_THRESHOLD),
            (m_arena_max, 1),
        ]
    else:
        assert libc.calls == [(m_mmap, report_cli.MMAP_THRESHOLD)]


def test_no_c_library_by_name_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def cdll(name: Any) -> Any:
        raise OSError("no C library")

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    report_cli._keep_heap()  # nothing set, nothing raised


_ARENAS = """
import ctypes, sys, threading
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "keep":
    import annotate.cli.report as r
    r._keep_heap()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
kept = []
def work():
    kept.append(libc.malloc(1 << 20))  # a block of the thread's arena
t = threading.Thread(target=work)
t.start(); t.join()
fp = libc.fopen(sys.argv[3].encode(), b"w")
libc.malloc_info(0, fp)
libc.fclose(fp)
"""


@pytest.mark.skipif(
    not hasattr(ctypes.CDLL(None), "malloc_info"), reason="glibc's malloc_info is needed"
)
@pytest.mark.parametrize("mode", ["keep", "default"])
def test_a_worker_thread_allocates_in_the_main_arena(tmp_path: Any, mode: str) -> None:
    """In a fresh process, glibc's own account (malloc_info's XML: one <heap> per arena)
    shows the worker thread's block in the main arena after _keep_heap, and in a second
    arena without it (so the check can fail)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(report_cli.__file__).resolve().parents[2]
    out = tmp_path / "info.xml"
    subprocess.run(
        [sys.executable, "-c", _ARENAS, str(root), mode, str(out)], check=True, timeout=60
    )
    heaps = out.read_text().count("<heap nr=")
    assert heaps == (1 if mode == "keep" else 2)
