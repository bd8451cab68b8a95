"""When a key may act on the item on screen: once its paint is confirmed, and not twice.

A voting screen shows one item after another. A key must apply to the item the
annotator saw, so :class:`KeyGate` holds every vote key closed from the moment a
new item is handed to the widgets until its paint is confirmed (Textual runs the
screen's ``call_after_refresh`` callbacks once the frame holding it has been
written to the terminal). Keys pressed before that moment are dropped, not
queued: a burst typed faster than the screen paints casts one vote, on the item
that was on screen. A repeat of the same vote key within :data:`REPEAT_DEBOUNCE_S`
of a vote is also dropped, so a double tap never votes the next item as well.

Key times are the times Textual stamped on the key events when they were read
from the terminal (:func:`clock` is the same clock), so a key read while the
frame was still being drawn counts as pressed before the paint even when it is
handled after it.

For tests only: with ``ANNOTATE_PAINT_LOG=PATH`` in the environment, every
confirmed paint appends ``item_id<TAB>monotonic_ns<TAB>wall_ns`` to ``PATH``
(one line, opened and closed each time; nothing is written without the variable).
"""

from __future__ import annotations

import gc
import math
import os
import sys
import time
from pathlib import Path

__all__ = ["PAINT_LOG_ENV", "REPEAT_DEBOUNCE_S", "KeyGate", "clock", "freeze_startup_objects"]

REPEAT_DEBOUNCE_S = 0.2
"""A vote key pressed again within this many seconds of the vote it repeats is ignored.

People take far longer than 200 ms to read a new item (the demo studies' minimum
response time is several seconds), while a double tap or a bouncing key repeats
within 30 to 120 ms.
"""

PAINT_LOG_ENV = "ANNOTATE_PAINT_LOG"
"""Environment variable naming the test-only paint log (see the module docstring)."""

clock = time.perf_counter if sys.platform == "win32" else time.monotonic
"""The clock Textual stamps events with (``Message.time``), in seconds."""


_startup_frozen = False


def freeze_startup_objects() -> None:
    """Keep the garbage collector's pauses short while an annotator votes (once per process).

    A key's time is stamped when Textual's input thread reads it, and that thread
    waits for the interpreter while a full collection runs. With every object of the
    app's start-up (Textual, SQLAlchemy, Rich, the study) in the oldest generation, a
    full collection took 60 to 210 ms on a loaded machine, so the second key of a 40 ms
    double tap could be read more than :data:`REPEAT_DEBOUNCE_S` after the first and
    count as a new vote. Collected once and frozen, those objects are no longer
    scanned (full collections then took 10 to 60 ms); later objects are collected as
    usual.
    """
    global _startup_frozen  # one process-wide switch
    if _startup_frozen:
        return
    _startup_frozen = True
    gc.collect()
    gc.freeze()


class KeyGate:
    """Which item generation is painted, and whether a key may act on it.

    Parameters
    ----------
    paint_log : str or Path, optional
        Test-only: append one line per confirmed paint to this file.
    """

    def __init__(self, paint_log: str | Path | None = None) -> None:
        self.generation = 0
        """The generation of the item last handed to the widgets (0: none yet)."""
        self.painted_generation = -1
        """The last generation whose paint was confirmed."""
        self.painted_at = math.inf
        """When the current item's paint was confirmed (:func:`clock`; inf: not yet)."""
        self._last_vote: tuple[str, float] | None = None
        self._paint_log = Path(paint_log) if paint_log else None

    @classmethod
    def from_environment(cls) -> KeyGate:
        """A gate that logs paints where :data:`PAINT_LOG_ENV` says (tests only)."""
        return cls(os.environ.get(PAINT_LOG_ENV) or None)

    @property
    def is_open(self) -> bool:
        """Whether the item on screen is painted and no vote on it has been taken."""
        return self.generation > 0 and self.painted_generation == self.generation

    def item_shown(self) -> int:
        """A new item was handed to the widgets: close the gate; returns its generation."""
        self.generation += 1
        self.painted_at = math.inf
        return self.generation

    def close(self) -> None:
        """Close the gate until the next item is shown and painted (a vote is on its way)."""
        self.generation += 1
        self.painted_at = math.inf

    def item_painted(self, generation: int, item_id: int | None) -> bool:
        """The frame holding ``generation`` was written; True when this opened the gate.

        A confirmation for an older generation, or a second one, changes nothing.
        """
        if generation != self.generation or self.painted_generation == generation:
            return False
        self.painted_generation = generation
        self.painted_at = clock()
        if self._paint_log is not None and item_id is not None:
            with self._paint_log.open("a", encoding="utf-8") as f:
                f.write(f"{item_id}\t{time.monotonic_ns()}\t{time.time_ns()}\n")
        return True

    def ready(self, pressed_at: float) -> bool:
        """Whether a key pressed at ``pressed_at`` (:func:`clock`) came after the paint."""
        return self.is_open and pressed_at >= self.painted_at

    def admit(self, key: str, pressed_at: float) -> bool:
        """Whether vote key ``key``, pressed at ``pressed_at`` (:func:`clock`), may act.

        It may when the item on screen is painted, the key was pressed after that
        paint, and it is not a repeat of the last vote's key within
        :data:`REPEAT_DEBOUNCE_S`. An admitted key is remembered as the last vote.
        """
        if not self.ready(pressed_at):
            return False
        if self._last_vote is not None:
            last_key, last_at = self._last_vote
            if key == last_key and pressed_at - last_at < REPEAT_DEBOUNCE_S:
                return False
        self._last_vote = (key, pressed_at)
        return True
