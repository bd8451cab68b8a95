"""The annotation app: welcome screen, voting screens, summary.

Build it with :func:`make_app`; ``annotate [--db PATH] [--annotator NAME]
[--study NAME]`` calls it and runs it. Keys are remappable in ``keys.toml``
(see :mod:`annotate.services.settings`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from annotate.commands import StudyCommands
from annotate.errors import AnnotateError
from annotate.messages import ItemPainted, StoreOpened
from annotate.names import one_line, sanitize
from annotate.services.settings import user_keymap
from annotate.views import StudyProgress

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from annotate.screens.vote_base import VoteScreen
    from annotate.services.quick_start import StartingSession
    from annotate.services.voting import VotingSession

QUIT_RELEASE_WAIT_S = 2.0
"""On quit, wait at most this long for the reservations to be released."""


class AnnotateApp(App[int]):
    """Blind pairwise annotation of questions (difficulty) and answers (arena).

    Parameters
    ----------
    engine : Engine or None
        The store, already migrated (see :func:`annotate.services.db.open_store`); None
        with ``starting``, whose real session opens the store.
    annotator : str, optional
        Annotator name; when given, the name prompt is skipped.
    study : str, optional
        Study to open; with ``annotator``, the app opens it directly (the welcome
        screen is built only when the annotator leaves the study).
    fixed_annotator : bool
        The name cannot be changed (``annotate serve``: the browser link fixes it); the
        welcome screen shows it without a name box and offers no other names.
    only_study : str, optional
        The only study listed and opened (a link limited to one study).
    keymap : dict, optional
        Binding id -> keys; ``None`` reads ``keys.toml`` from the config directory.
    starting : StartingSession, optional
        The quick start (:mod:`annotate.services.quick_start`): its item is shown at
        once and the store opens in the background after it is painted.
    """

    CSS_PATH = "app.tcss"
    TITLE = "annotate"
    COMMANDS = App.COMMANDS | {StudyCommands}
    BINDINGS = [
        Binding(
            "q",
            "quit",
            "Quit",
            tooltip="Quit. Every vote is already saved; start again to resume.",
            id="quit",
        ),
        Binding(
            "question_mark",
            "help",
            "Help",
            key_display="?",
            tooltip="Show the keys and how voting works.",
            id="help",
        ),
    ]

    def __init__(
        self,
        engine: Engine | None,
        *,
        annotator: str | None = None,
        study: str | None = None,
        keymap: dict[str, str] | None = None,
        starting: StartingSession | None = None,
        fixed_annotator: bool = False,
        only_study: str | None = None,
    ) -> None:
        super().__init__()
        if engine is None and starting is None:
            raise ValueError("AnnotateApp needs an engine or a starting session")
        if fixed_annotator and not annotator:
            raise ValueError("fixed_annotator needs the annotator's name")
        self.fixed_annotator = fixed_annotator
        self.only_study = only_study
        self._engine = engine
        self.starting = starting
        """The quick start's session (None on the usual path)."""
        self.annotator = annotator
        """The annotator's name once known (from the command line or the welcome screen)."""
        self.initial_study = study
        """The study named on the command line, opened as soon as the name is known."""
        self._keymap_override = keymap
        self.instructions_shown: set[tuple[str, str]] = set()
        """(study, annotator) whose instructions were shown in this run (once per launch)."""
        self.key_pressed_at: float | None = None
        """When the key being handled was read from the terminal (Textual's event time).

        Voting screens compare it with the paint of the item on screen: a key read
        before the paint is dropped even when it is handled after it.
        """

    @property
    def engine(self) -> Engine:
        """The store (with a quick start, opened by its session: blocks until it is)."""
        if self._engine is None:
            assert self.starting is not None
            self._engine = self.starting.open_real().engine
        return self._engine

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.key_pressed_at = event.time  # bindings run inside the call below
        await super().on_event(event)

    def on_mount(self) -> None:
        keymap, err = user_keymap(self._keymap_override)
        if err is not None:
            self.notify(
                f"{sanitize(str(err))}\nThe default keys are used.",
                title="Key settings",
                severity="error",
                markup=False,
            )
        self.set_keymap(keymap)
        if self.starting is not None:
            self._screen_class(self.starting).prepare(self.starting)
            self._push_voting(self.starting)
        elif self.annotator and self.initial_study:
            self.open_study(self.initial_study)  # the welcome screen waits until they leave
        else:
            self._push_welcome()

    def _push_welcome(self) -> None:
        """Show the welcome screen unless it is in the stack already."""
        from annotate.screens.welcome import WelcomeScreen

        if not any(isinstance(s, WelcomeScreen) for s in self.screen_stack):
            names = None if self.fixed_annotator else self.known_names
            self.push_screen(
                WelcomeScreen(self, self.list_studies, names, fixed_name=self.fixed_annotator)
            )

    def on_item_painted(self, message: ItemPainted) -> None:
        """After a quick start's first paint: open the store in the background."""
        starting = self.starting
        if starting is not None and starting.real is None:
            starting.load_in_background(self._store_opened)

    def _store_opened(self, err: BaseException | None) -> None:
        """The quick start's store opened (or failed); called in the loading thread."""
        self.post_message(StoreOpened(err))  # thread-safe; dropped if the app has exited

    def on_store_opened(self, message: StoreOpened) -> None:
        from annotate.screens.vote_base import VoteScreen

        if message.error is not None:
            self.report_failure(message.error)
            return
        # The store's start-up objects join the app's in the generation the collector skips
        # (see annotate.screens.key_gate.freeze_startup_objects); no collection first: it
        # would pause the reading of keys while the annotator may be voting.
        gc.freeze()
        starting = self.starting
        if starting is not None and not starting.matches_preview():
            for screen in self.screen_stack:
                if isinstance(screen, VoteScreen) and screen.session is starting:
                    screen.reload_item()

    # --- opening a study ----------------------------------------------------

    def list_studies(self, annotator: str | None) -> list[StudyProgress]:
        """Every study with the annotator's progress (called from a worker thread)."""
        from annotate.services.voting import study_progress

        rows = study_progress(self.engine, annotator)
        if self.only_study is not None:
            rows = [r for r in rows if r.name == self.only_study]
        return rows

    def known_names(self) -> list[str]:
        """Annotator names in the database, offered as completions (called from a thread)."""
        from annotate.services.voting import known_annotators

        return known_annotators(self.engine)

    def open_study(self, study: str) -> None:
        """Open ``study`` for the current annotator (the session loads in a thread).

        Every way in (the welcome screen, ``--study``, the command palette) goes
        through the same steps before the first item: see :meth:`_show_session`.
        """
        if not self.annotator:
            self.notify("Type your name first, then press Enter.", severity="warning")
            return
        if self.only_study is not None and study != self.only_study:
            self.notify("Your link is for another study.", severity="warning")
            return
        self._load_session(study, self.annotator)

    @work(thread=True, exclusive=True, exit_on_error=False, group="open-study")
    def _load_session(self, study: str, annotator: str) -> None:
        from annotate.services.voting import VotingSession

        session = VotingSession(self.engine, study, annotator)
        self._screen_class(session).prepare(session)
        self.call_from_thread(self._show_session, session)

    def _show_session(self, session: VotingSession) -> None:
        """Before the annotator's first vote in the study: the instructions, then the subjects.

        The instructions come once per launch: when the annotator has no vote in the
        study yet and they were not shown in this run of the app (leaving the study and
        opening it again goes straight to the item); ``?`` shows them at any time. A
        difficulty study with several subjects then asks which ones the annotator can
        judge, unless they chose already. Both come before the first item is painted,
        so its response time does not include the reading.
        """
        from annotate.screens.instructions import InstructionsScreen

        if session.needs_questionnaire:  # the study's questionnaire, once, before all else
            self._ask_questionnaire(session)
            return
        not_started = session.progress().done == 0
        seen = (session.study.name, session.annotator)
        if not_started and session.instructions and seen not in self.instructions_shown:
            self.instructions_shown.add(seen)
            title = session.study.title or session.study.name
            self.push_screen(
                InstructionsScreen(title, session.instructions),
                lambda _: self._ask_subjects(session, not_started),
            )
        else:
            self._ask_subjects(session, not_started)

    def _ask_questionnaire(self, session: VotingSession) -> None:
        from annotate.screens.questionnaire import QuestionnaireScreen

        def answered(answers: dict[str, list[str]] | None) -> None:
            if answers is None:  # Escape: back to the studies, asked again next time
                self.initial_study = None
            else:
                self._store_answers(session, answers)

        self.push_screen(QuestionnaireScreen(session.settings.questionnaire), answered)

    @work(thread=True, exclusive=True, exit_on_error=False, group="open-study")
    def _store_answers(self, session: VotingSession, answers: dict[str, list[str]]) -> None:
        session.answer_questionnaire(answers)
        self._screen_class(session).prepare(session)
        self.call_from_thread(self._show_session, session)

    def _ask_subjects(self, session: VotingSession, not_started: bool) -> None:
        from annotate.screens.subjects import SubjectsScreen

        if not_started and not session.excluded_subjects and len(session.subjects) > 1:
            # Ask before the first pair is painted, so its response time is honest.
            self.push_screen(
                SubjectsScreen(session), lambda known: self._subjects_chosen(session, known)
            )
        else:
            self._push_voting(session)

    def _subjects_chosen(self, session: VotingSession, known: set[str] | None) -> None:
        if known is None:
            self._push_voting(session)
        else:
            self._exclude_subjects(session, set(session.subjects) - known)

    @work(thread=True, exclusive=True, exit_on_error=False, group="open-study")
    def _exclude_subjects(self, session: VotingSession, excluded: set[str]) -> None:
        session.set_excluded_subjects(excluded)
        self._screen_class(session).prepare(session)
        self.call_from_thread(self._push_voting, session)

    @staticmethod
    def _screen_class(session: VotingSession) -> type[VoteScreen]:
        from annotate.screens.battle import BattleScreen
        from annotate.screens.pair import PairScreen

        return PairScreen if session.kind == "difficulty" else BattleScreen

    def _push_voting(self, session: VotingSession) -> None:
        self.initial_study = None
        self.push_screen(self._screen_class(session)(session), self._left_study)

    def _left_study(self, _: None) -> None:
        """Back from a study: to the welcome screen (built now if the app began on the study)."""
        self._push_welcome()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            if event.worker.group == "open-study":
                self._study_failed()
            self.report_failure(event.worker.error)

    def _study_failed(self) -> None:
        from annotate.screens.welcome import WelcomeScreen

        self.initial_study = None
        if isinstance(self.screen, WelcomeScreen) and not self.screen.loaded:
            self.screen.reload(focus_list=True)
        else:
            self._push_welcome()

    def report_failure(self, err: BaseException) -> None:
        """Report a failed worker (opening a study, voting, undo); the app goes on.

        Errors meant for people (:class:`AnnotateError`) become a notification;
        anything else opens an error modal.
        """
        if isinstance(err, AnnotateError):
            self.notify_error(err)
            return
        from annotate.screens.error import ErrorScreen

        self.push_screen(ErrorScreen(f"{type(err).__name__}: {err}"))

    def notify_error(self, err: AnnotateError) -> None:
        """An error for people as a notification (names in it are sanitised)."""
        self.notify(sanitize(str(err)), title=one_line(err.title), severity="error", markup=False)

    # --- actions and commands -------------------------------------------------

    async def action_quit(self) -> None:
        """Quit; the reservations of open studies are released first (at most 2 s)."""
        from annotate.screens.vote_base import VoteScreen, release_sessions

        sessions = [s.session for s in self.screen_stack if isinstance(s, VoteScreen)]
        worker = release_sessions(self, sessions)
        if worker is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=QUIT_RELEASE_WAIT_S)
        self.exit()

    def action_help(self) -> None:
        from annotate.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        commands = getattr(screen, "palette_commands", None)
        if commands is not None:
            yield from commands()
        yield SystemCommand("Help: keys", "Show the keys and how voting works", self.action_help)


def make_app(
    db_path: Path | str | None = None,
    *,
    engine: Engine | None = None,
    annotator: str | None = None,
    study: str | None = None,
    keymap: dict[str, str] | None = None,
    quick: bool = False,
    seed_demo: bool = True,
    fixed_annotator: bool = False,
    only_study: str | None = None,
) -> AnnotateApp:
    """Build the app on the database at ``db_path`` (None: the default one) or an open ``engine``.

    With ``seed_demo``, a database without studies gets the embedded demo studies. With
    ``quick`` (what ``annotate --annotator NAME --study STUDY`` does), an annotator
    resuming the study gets the quick start of :mod:`annotate.services.quick_start`
    when it applies: the first item is read with sqlite3 and the store opens after it
    is painted. ``fixed_annotator`` and ``only_study``: see :class:`AnnotateApp` (never
    with the quick start).
    """
    quick = quick and not fixed_annotator and "://" not in str(db_path)  # not a database URL
    if engine is None and quick and annotator and study:
        from annotate.services.quick_start import quick_start
        from annotate.store.quick import default_db_path

        path = Path(db_path) if db_path is not None else default_db_path()

        def open_engine() -> Engine:
            from annotate.services.db import open_store

            return open_store(db_path, seed_demo=seed_demo)

        starting = quick_start(path, study, annotator, open_engine)
        if starting is not None:
            return AnnotateApp(
                None, annotator=annotator, study=study, keymap=keymap, starting=starting
            )
    if engine is None:
        from annotate.services.db import open_store

        engine = open_store(db_path, seed_demo=seed_demo)
    return AnnotateApp(
        engine,
        annotator=annotator,
        study=study,
        keymap=keymap,
        fixed_annotator=fixed_annotator,
        only_study=only_study,
    )
