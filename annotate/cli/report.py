"""``annotate report``: the human-alignment report of a difficulty study."""

from __future__ import annotations

import argparse
import atexit
import gc
import sys
from pathlib import Path
from typing import Any

from annotate.cli.options import Parents, db_path
from annotate.cli.output import _JSON_ESCAPES, progress_bar, say, table
from annotate.errors import AnnotateError
from annotate.names import one_line

MAX_PRINTED_ROWS = 30
"""Longer tables are cut in the terminal (the CSVs and Markdown hold every row)."""


def add_parser(subparsers: Any, parents: Parents) -> None:
    """Add ``report`` to ``subparsers``."""
    r = subparsers.add_parser(
        "report",
        parents=[parents.db, parents.json],
        help="human-alignment report of a difficulty study",
        description="How well do difficulty estimators (EIP, Simple Rank, 1PL, 2PL, MIRT and "
        "columns of --difficulty) agree with the annotators' 'which is harder' votes: "
        "individual and consensus alignment, Cohen's kappa, model pools, agreement among "
        "annotators and a human difficulty scale, with bootstrap intervals. Prints the "
        "tables and writes report.md, CSVs and PNG plots.",
    )
    r.add_argument(
        "--study",
        metavar="NAME",
        default=argparse.SUPPRESS,
        help="difficulty study (default: the only difficulty study with votes)",
    )
    r.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="write the files here (default: exports/report-<study>/)",
    )
    r.add_argument(
        "--difficulty",
        metavar="FILE",
        default=None,
        help="CSV question_id,<name>,... of extra difficulty columns (higher = harder)",
    )
    r.add_argument(
        "--boot",
        metavar="N",
        type=int,
        default=1000,
        help="bootstrap replicates per resampling scheme (default 1000; 0 = none)",
    )
    r.add_argument(
        "--resample",
        choices=["units", "annotators", "both"],
        default="both",
        help="bootstrap scheme of the intervals: both = pairs and annotators resampled "
        "together (two-way, Owen 2007; default, shown with the one-way intervals beside it), "
        "units = over pairs only, annotators = over annotators only",
    )
    r.add_argument("--seed", metavar="S", type=int, default=0, help="bootstrap seed (default 0)")
    r.add_argument(
        "--near-tie-margin",
        metavar="M",
        type=float,
        default=0.0,
        help="a pair whose majority margin |n1-n2|/(n1+n2) is at most M is a near-tie "
        "(default 0: exact ties only)",
    )
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument(
        "--latex",
        action="store_true",
        help="also write report.tex: the alignment and agreement tables as booktabs "
        "tabulars, with the Methods paragraph and the references",
    )
    r.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """Compute the report, write its files and print its tables."""
    if not 0.0 <= args.near_tie_margin < 1.0:
        raise AnnotateError(f"--near-tie-margin must be in [0, 1), got {args.near_tie_margin}")
    target = db_path(args)
    _keep_heap()
    # the collector off while the modules are imported (they make no garbage; it would
    # walk their new objects again and again: about 6% of the imports' CPU), then their
    # objects frozen out of its later passes (_imported)
    gc.disable()
    prefetch = None
    engine = None
    _freeze_at_exit()
    try:
        # forked before this process opens the database, and before it imports the store
        # when the child reads with sqlite3 alone
        prefetch = _prefetch(args, target)
        _numpy_extras_lazy()
        from annotate.services.db import open_store
        from annotate.store.engine import reader_engine

        store = open_store(target)  # migrated; the report only reads, and must not
        engine = reader_engine(store)  # hold the writers' lock while it reads every vote
        if engine is not store:
            store.dispose()
        if prefetch is not None:
            prefetch.go()
        return _difficulty_report(args, engine, prefetch)
    finally:
        gc.unfreeze()  # as before for a caller that goes on (tests call main())
        gc.enable()
        if prefetch is not None:
            prefetch.close()
        if engine is not None:  # its connections closed now, not by a collection at exit
            engine.dispose()


MMAP_THRESHOLD = 256 << 20
"""Blocks of at least this many bytes are mapped by themselves (:func:`_keep_heap`)."""
TRIM_THRESHOLD = 1 << 30
"""Free memory at the top of the heap is given back beyond this many bytes (:func:`_keep_heap`)."""


def _keep_heap() -> None:
    """glibc's malloc told to keep the memory the report frees for its next arrays.

    By default glibc maps every block above a threshold (128 kB, raised to at most 32 MB
    as such blocks are freed) by itself and unmaps it when freed, and gives free memory
    at the top of the heap back at once: the report's arrays (the vote rows, the
    bootstrap's resamples, tens of MB each, made and dropped over and over) then cost
    page faults each time they are touched again, some 100-165k per run and a good part
    of its system time. With these thresholds the freed blocks stay in the heap and are
    reused (the peak memory grows by a few tens of MB). And every thread allocates in
    the one heap (ARENA_MAX 1), so the verdicts' worker reuses what the main thread
    freed. The same as ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` and
    ``MALLOC_ARENA_MAX`` in the environment; only
    for this command (set before the vote-reading child is forked, which inherits them).
    They last as long as the process: a caller that goes on after :func:`cmd_report`
    (tests calling ``main``) keeps its freed memory until it exits, which changes no
    result. Nothing off glibc."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (or no C library by name)
        return
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8  # glibc's malloc.h
    if mallopt(m_mmap_threshold, MMAP_THRESHOLD) != 1:
        # refused (a glibc whose largest threshold is lower): its adaptive thresholds
        # left alone, since a trim threshold alone would turn them off with blocks of
        # 128 kB and up still mapped one by one (several times the page faults)
        return
    mallopt(m_trim_threshold, TRIM_THRESHOLD)
    # one heap for every thread (ARENA_MAX), as MALLOC_ARENA_MAX=1: the verdicts' worker
    # thread otherwise gets its own arena of 64 MB heaps, mapped and unmapped as its fits'
    # temporaries come and go, beside the main thread's kept heap. Measured (1,000 x
    # 1,000, 7 interleaved pairs): peak RSS 0.70 -> 0.62 GB, minor faults 108k -> 88k,
    # the same CPU and wall. Only before the first thread is started (glibc fixes its
    # arena limit when a second arena is first needed): the command line calls this first
    mallopt(m_arena_max, 1)


NUMPY_EXTRAS = ("testing", "f2py")
"""numpy's submodules :func:`_numpy_extras_lazy` loads on first use only."""


def _numpy_extras_lazy() -> None:
    """numpy.testing and numpy.f2py loaded when first used, not when SciPy is imported.

    SciPy's array-API layer (``scipy._lib.array_api_compat.numpy``) copies numpy's
    namespace, looking up every public name: that imports numpy's lazily loaded
    submodules, among them ``numpy.testing`` (with :mod:`unittest`) and ``numpy.f2py``
    (the Fortran wrapper generator), about 0.07 s of CPU for modules the report never
    uses, on the path before its computation. Here they are put in place as the standard
    library's lazy modules (:class:`importlib.util.LazyLoader`): the same module objects,
    executed at their first attribute access, if any. Only before SciPy's first import,
    for modules not imported yet."""
    import importlib.util

    if "scipy" in sys.modules or "numpy" not in sys.modules:
        return
    numpy = sys.modules["numpy"]
    for name in NUMPY_EXTRAS:
        full = f"numpy.{name}"
        if full in sys.modules or name in vars(numpy):
            continue
        spec = importlib.util.find_spec(full)
        if spec is None or spec.loader is None:
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
        setattr(numpy, name, module)


_FREEZE_AT_EXIT: list[bool] = []


def _freeze_at_exit() -> None:
    """At the interpreter's exit, every object left is frozen out of the collector.

    The interpreter's finalization runs full collections, which walk every object
    alive: the imported modules' (numpy, scipy, SQLAlchemy...) and the report's last
    view, kept by :func:`annotate.services.report_view.printed_view` (a million-cell
    table at 1,000 annotators): 0.3-0.6 s after the report is printed, for nothing the
    process needs. Frozen objects are still freed with their modules; only garbage in
    reference cycles is left to the operating system, as at any exit. The command's
    database connections are closed before (``engine.dispose()`` in
    :func:`cmd_report`). Registered once per process."""
    if not _FREEZE_AT_EXIT:
        _FREEZE_AT_EXIT.append(True)
        atexit.register(gc.freeze)


def _imported() -> None:
    """The report's modules are imported: their objects (alive until the process ends)
    leave the collector's passes for good, and the collector is on again."""
    gc.freeze()
    gc.enable()


def _prefetch(args: argparse.Namespace, target: Path | str | None) -> Any:
    """The votes of the study named by ``--study`` read in a child process while this one
    imports the store and the statistics (:class:`annotate.services.report_prefetch.Prefetch`),
    for an existing SQLite file; None otherwise (the monitor then reads them itself).

    Without a vote cache file for the study the child starts at once and reads with
    sqlite3 alone; with one, it is forked after the store's imports, which it then has
    (forked before them, it imported them again: +0.4 s of CPU), and loads the file once
    this process has opened the database."""
    study = getattr(args, "study", None)
    if study is None or isinstance(target, str):  # a database URL: read here
        return None
    from annotate.services.report_prefetch import Prefetch
    from annotate.services.vote_cache_path import sqlite_cache_file
    from annotate.store.quick import default_db_path

    path = target if target is not None else default_db_path()
    if not path.is_file():  # open_store says why (or creates an empty database)
        return None
    cached = sqlite_cache_file(path, study)
    if cached is None or not cached.is_file():
        # numpy and the reading code, which this process imports later anyway: the child
        # has them without importing them again (forked before them: +0.1 s of its CPU
        # for no earlier rows)
        import numpy  # noqa: F401

        import annotate.store.quick_votes

        return Prefetch.start(path, study, at_once=True)
    import annotate.services.db  # the store, inherited by the child
    import annotate.services.monitor_rows  # noqa: F401 - the child's reading (numpy), inherited

    return Prefetch.start(path, study)


def _difficulty_report(args: argparse.Namespace, engine: Any, prefetch: Any) -> int:
    """The report of a difficulty study (an arena study's: :func:`_arena_report`)."""
    from annotate.services.paths import inside, output_folder
    from annotate.services.report import human_alignment_report, study_kind, write_report

    _imported()
    if study_kind(engine, getattr(args, "study", None)) == "arena":
        return _arena_report(args, engine)
    from annotate.services.json_ready import kept_texts

    # the texts of the files (the pairwise kappa matrix's, made during the computation
    # by a thread that would otherwise wait) and the CSV's serve the --json, then are
    # let go
    with kept_texts():
        with progress_bar("computing the report") as progress:
            rep = human_alignment_report(
                engine,
                getattr(args, "study", None),
                difficulty_file=Path(args.difficulty) if args.difficulty else None,
                n_boot=args.boot,
                seed=args.seed,
                resample=args.resample,
                near_tie_margin=args.near_tie_margin,
                progress=progress,
                prefetch=prefetch,
            )
        # the collector off for the files and the printing (cmd_report turns it on
        # again): they make no garbage cycles, but their thousands of new tuples (the
        # pairwise table's rows, a thousand cells each) set off young collections that
        # walk every cell
        gc.disable()
        if args.out:
            folder = output_folder(Path(args.out))
        else:
            # The study name becomes a folder name: checked to stay under exports/.
            folder = inside(output_folder(Path("exports")), f"report-{rep.study}")
        written = write_report(rep, folder, plots=not args.no_plots, latex=args.latex)
        if args.json:
            doc = rep.as_dict()
            doc["files"] = [str(f) for f in written.files]
            _print_json(doc)
            return 0
    from annotate.services.report_view import printed_view

    _print_view(printed_view(rep), written)
    return 0


def _arena_report(args: argparse.Namespace, engine: Any) -> int:
    """``annotate report --study ARENA``: leaderboard, both-bad shares, verdicts."""
    from annotate.services.paths import inside, output_folder
    from annotate.services.report import arena_report, write_arena_report
    from annotate.services.report_view import arena_view

    rep = arena_report(engine, args.study)
    if args.out:
        folder = output_folder(Path(args.out))
    else:
        folder = inside(output_folder(Path("exports")), f"report-{rep.study}")
    written = write_arena_report(rep, folder)
    if args.json:
        doc = rep.as_dict()
        doc["files"] = [str(f) for f in written.files]
        _print_json(doc)
        return 0
    _print_view(arena_view(rep), written)
    return 0


def _print_json(doc: dict[str, Any]) -> None:
    """Print ``doc`` as :func:`annotate.cli.output.print_json` does after
    :func:`annotate.services.json_ready.check_json`, the same text: made valid by
    ``json_ready``, written by ``indented_json`` (which raises on a non-finite number as
    the check does), its long number matrices written from their rows' texts
    (``ready_json_text``): several times as fast on a report's million pairwise-kappa and
    overlap cells."""
    from annotate.services.json_ready import ready_json_text

    text = ready_json_text(doc)
    # of the characters _JSON_ESCAPES escapes, only DEL is ASCII: an ASCII text without
    # one (the usual report, 47 MB at 1,000 annotators) is checked in two C passes
    if not text.isascii() or "\x7f" in text:
        text = text.translate(_JSON_ESCAPES)
    sys.stdout.write(text)  # not text + "\n": a copy of 47 MB
    sys.stdout.write("\n")


def _print_view(view: Any, written: Any) -> None:
    """Print a report's title, summary and tables, and the files written."""
    say(one_line(view.title))
    say()
    for line in view.summary:
        say(one_line(line))
    for t in view.tables:
        say()
        say(one_line(t.title))
        rows = list(t.rows)
        if t.key == "pairwise" and len(t.columns) > 13:
            say(f"  ({len(rows)} annotators: see pairwise_kappa.csv)")
            continue
        say(table(rows[:MAX_PRINTED_ROWS], t.columns))
        if len(rows) > MAX_PRINTED_ROWS:
            say(f"  ... {len(rows) - MAX_PRINTED_ROWS} more rows in the CSV files")
        if t.note:
            say(f"  {one_line(t.note)}")
    say()
    say(f"wrote {len(written.files)} files to {one_line(written.folder)}/")
    for note in written.notes:
        say(f"  {one_line(note)}")
