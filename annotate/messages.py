"""Messages shared by several screens (tests watch them with ``message_hook``)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from annotate.views import VoteReceipt


@dataclass
class VoteRecorded(Message):
    """A vote was committed to the database (posted after the commit)."""

    study: str
    receipt: VoteReceipt


@dataclass
class VoteUndone(Message):
    """The annotator's last vote was withdrawn (a retraction row was committed)."""

    study: str


@dataclass
class StudyOpened(Message):
    """A voting screen for ``study`` is shown to ``annotator``."""

    study: str
    annotator: str


@dataclass
class ItemPainted(Message):
    """The item ``item_id`` of ``study`` is on screen (its paint confirmed; keys may act on it)."""

    study: str
    item_id: int


@dataclass
class StoreOpened(Message):
    """A quick start's full store opened in the background (``error``: it failed)."""

    error: BaseException | None


@dataclass
class StudyFinished(Message):
    """The annotator has no items left in ``study``; the summary is shown."""

    study: str
