"""A study's settings, typed once: :class:`StudySettings` with per-kind defaults.

The ``[settings]`` table of ``study.toml`` is parsed into a :class:`StudySettings` when
the study folder is read (:func:`annotate.services.studies.parse_study`), stored as JSON
in ``study.settings_json``, and parsed again, with the same checks, when the study is
read from the store (:func:`annotate.store.repo.get_study`): every other module reads
attributes, never a dict with its own default. :meth:`StudySettings.takes_votes` is
the one rule for "this item still takes votes" (the overlap cap).

Dependency-free (no store, no services), like :mod:`annotate.choices`.

Examples
--------
>>> StudySettings.for_kind("arena").overlap, StudySettings.for_kind("difficulty").overlap
(5, 0)
>>> s = StudySettings.from_dict("arena", {"overlap": 2, "reveal_models": False})
>>> s.overlap, s.reveal_models, s.min_response_ms, s.takes_votes(1), s.takes_votes(2)
(2, False, 2000, True, False)
>>> StudySettings.from_dict("difficulty", {"overlap": -1})
Traceback (most recent call last):
...
annotate.study_settings.SettingError: setting overlap = -1: expected a whole number >= 0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

KINDS = ("difficulty", "arena")
"""The study kinds."""

MAX_INSTRUCTIONS_CHARS = 20_000
"""The longest ``instructions`` text a study may give."""


class SettingError(ValueError):
    """A study setting that is unknown or has a value of the wrong type or range.

    ``key`` is the setting's name, ``value`` what was given, ``expected`` what is
    allowed; the message is one line: ``setting KEY = VALUE: expected ...``.
    """

    def __init__(self, key: str, value: Any, expected: str, *, unknown: bool = False) -> None:
        self.key = key
        self.value = value
        self.expected = expected
        self.unknown = unknown
        what = f"unknown setting {key}" if unknown else f"setting {key} = {_short(value)}"
        super().__init__(f"{what}: expected {expected}")


def _short(value: Any) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def takes_votes(overlap: int, judged: int) -> bool:
    """Whether an item judged ``judged`` times still takes votes under ``overlap``.

    The one overlap rule: ``overlap`` 0 means every annotator judges every item (no
    cap); otherwise an item leaves the queues once it holds ``overlap`` judgments (or
    slots taken: current votes plus live reservations).

    Examples
    --------
    >>> takes_votes(0, 10**6), takes_votes(3, 2), takes_votes(3, 3)
    (True, True, False)
    """
    return overlap <= 0 or judged < overlap


@dataclass(frozen=True)
class QuestionnaireItem:
    """One question of a study's annotator questionnaire (``[[questionnaire]]``).

    Examples
    --------
    >>> q = QuestionnaireItem.from_raw(1, {"key": "field", "prompt": "Your field?",
    ...                                    "choices": ["Biology", "Law"]})
    >>> q.key, q.choices, q.multiple
    ('field', ('Biology', 'Law'), False)
    """

    key: str
    """The answer's name in the database, the export and the report's grouping."""
    prompt: str
    """The question as shown (literally)."""
    choices: tuple[str, ...]
    """The answers offered, in order."""
    multiple: bool = False
    """Whether several choices may be chosen (for example the subjects one knows)."""

    @classmethod
    def from_raw(cls, number: int, raw: Any) -> QuestionnaireItem:
        """Validate one ``[[questionnaire]]`` table (``number`` counts from 1)."""
        where = f"questionnaire item {number}"
        if not isinstance(raw, Mapping):
            raise SettingError("questionnaire", raw, f"{where}: a table")
        extra = sorted(str(k) for k in raw if k not in ("key", "prompt", "choices", "multiple"))
        if extra:
            raise SettingError(
                "questionnaire", extra[0], f"{where}: only key, prompt, choices, multiple"
            )
        key, prompt = raw.get("key"), raw.get("prompt")
        if not isinstance(key, str) or not key.strip() or len(key) > 60:
            raise SettingError("questionnaire", key, f"{where}: key, a name of 1-60 characters")
        if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > 2000:
            raise SettingError(
                "questionnaire", prompt, f"{where}: prompt, text of 1-2,000 characters"
            )
        choices = raw.get("choices")
        if (
            not isinstance(choices, list | tuple)
            or not 1 <= len(choices) <= 100
            or not all(isinstance(c, str) and c.strip() and len(c) <= 200 for c in choices)
            or len(set(choices)) != len(choices)
        ):
            raise SettingError(
                "questionnaire",
                choices,
                f"{where}: choices, a list of 1-100 distinct non-empty strings (<= 200 chars)",
            )
        multiple = raw.get("multiple", False)
        if not isinstance(multiple, bool):
            raise SettingError("questionnaire", multiple, f"{where}: multiple, true or false")
        return cls(key.strip(), prompt, tuple(choices), multiple)

    def as_dict(self) -> dict[str, Any]:
        """As stored (JSON) and exported (``study.toml``)."""
        return {
            "key": self.key,
            "prompt": self.prompt,
            "choices": list(self.choices),
            "multiple": self.multiple,
        }


@dataclass(frozen=True)
class StudySettings:
    """Settings of one study; construct with :meth:`for_kind` or :meth:`from_dict`.

    The defaults below are a difficulty study's; an arena study's differ where noted
    (:data:`ARENA_DEFAULTS`).
    """

    kind: str = "difficulty"
    """``difficulty`` or ``arena`` (not a setting of the file: the study's kind)."""
    overlap: int = 0
    """How many annotators judge each item; 0 = all of them (arena default 5)."""
    seed: int = 0
    """The schedule seed: order and sides are deterministic from (study, annotator, seed)."""
    file_order: bool = False
    """Show the items in the study file's order, the same for every annotator (under an
    overlap cap the least-judged first), instead of each annotator's own random order: for
    an order written by ``annotate plan pairs``. Sides stay random per annotator."""
    min_response_ms: int = 1500
    """Votes faster than this are stored as ``fast`` (they still count; arena default 2000)."""
    reveal_models: bool = False
    """Arena: show the model names after the vote, which makes it final (arena default true)."""
    identity_phrases: tuple[str, ...] = ()
    """Arena only: phrases that mark a response as naming its model."""
    render_markdown: bool = False
    """Show the study's texts as safely rendered Markdown (arena default true)."""
    instructions: str = ""
    """Markdown shown before the first item and on ``?`` (stored as given)."""
    schedule: str = "standard"
    """``standard`` (each annotator's own random order; least-judged first under an
    overlap cap) or ``adaptive`` (the most informative item next, see
    :mod:`annotate.services.adaptive`)."""
    exploration: float = 0.2
    """Adaptive schedule: the share of items drawn uniformly at random, in [0, 1]."""
    target_width: float = 0.0
    """Adaptive schedule: the stopping rule's target, the full width (Elo points) of every
    rating's 95% interval; 0 = no width target (items still stop once settled)."""
    retest_share: float = 0.0
    """Share (0-1) of an annotator's items shown again later with sides swapped (issue 16)."""
    retest_after: int = 10
    """How many of the annotator's votes come between an item and its swapped re-test."""
    questionnaire: tuple[QuestionnaireItem, ...] = ()
    """Questions asked once per annotator before the first item (``[[questionnaire]]``)."""
    route_subjects: str = ""
    """Difficulty: the key of a ``multiple`` questionnaire question whose choices are
    subjects; an annotator then sees only the subjects they declared ("" = off)."""

    @classmethod
    def for_kind(cls, kind: str) -> StudySettings:
        """The defaults of a study of ``kind``."""
        if kind not in KINDS:
            raise ValueError(f"unknown study kind {kind!r}: expected difficulty or arena")
        return ARENA_DEFAULTS if kind == "arena" else DIFFICULTY_DEFAULTS

    @classmethod
    def from_dict(
        cls, kind: str, raw: Mapping[str, Any], *, ignore_unknown: bool = False
    ) -> StudySettings:
        """Validate ``raw`` (a ``[settings]`` table or the stored JSON) over the kind's defaults.

        Raises
        ------
        SettingError
            On the first unknown key (unless ``ignore_unknown``) or bad value.
        """
        base = cls.for_kind(kind)
        allowed = setting_names(kind)
        changes: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in allowed:
                if ignore_unknown:
                    continue
                raise SettingError(str(key), value, f"one of {', '.join(allowed)}", unknown=True)
            if key == "questionnaire":
                changes[key] = _questionnaire(value)
            else:
                changes[key] = _checked(key, value, type(getattr(base, key)))
        out = replace(base, **changes)
        if out.retest_share > 1:
            raise SettingError("retest_share", out.retest_share, "a number from 0 to 1")
        if out.retest_share > 0 and out.kind == "arena" and out.reveal_models:
            raise SettingError(
                "retest_share",
                out.retest_share,
                "0 while reveal_models = true (a re-test after the names were revealed "
                "is not blind): set reveal_models = false",
            )
        keys = [q.key for q in out.questionnaire]
        if len(set(keys)) != len(keys):
            raise SettingError("questionnaire", keys, "questionnaire items with distinct keys")
        if out.route_subjects:
            if out.route_subjects not in keys:
                raise SettingError(
                    "route_subjects", out.route_subjects, "the key of a questionnaire item"
                )
            if not out.questionnaire[keys.index(out.route_subjects)].multiple:
                raise SettingError(
                    "route_subjects",
                    out.route_subjects,
                    "the key of a questionnaire item with multiple = true",
                )
        return out

    def as_dict(self) -> dict[str, Any]:
        """The settings as stored (JSON) and exported (``study.toml``): the kind's keys."""
        out: dict[str, Any] = {}
        base = self.for_kind(self.kind)
        for name in setting_names(self.kind):
            value = getattr(self, name)
            if name in QUALITY_SETTINGS + ADAPTIVE_SETTINGS and value == getattr(base, name):
                continue  # issue 16's settings only where given: older JSON stays the same
            if name == "questionnaire":
                out[name] = [q.as_dict() for q in value]
            else:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def takes_votes(self, judged: int) -> bool:
        """Whether an item judged ``judged`` times still takes votes (see :func:`takes_votes`)."""
        return takes_votes(self.overlap, judged)

    @property
    def capped(self) -> bool:
        """Whether the study caps how many annotators judge each item (``overlap`` > 0)."""
        return self.overlap > 0


QUALITY_SETTINGS = ("retest_share", "retest_after", "questionnaire", "route_subjects")
"""Settings of the quality checks and questionnaire (issue 16), stored only where set."""


def setting_names(kind: str) -> tuple[str, ...]:
    """The settings a study of ``kind`` may give, in file order."""
    names = tuple(f.name for f in fields(StudySettings) if f.name != "kind")
    if kind == "arena":
        return tuple(n for n in names if n != "route_subjects")
    return tuple(n for n in names if n != "identity_phrases")


def _questionnaire(value: Any) -> tuple[QuestionnaireItem, ...]:
    if not isinstance(value, list | tuple):
        raise SettingError("questionnaire", value, "a list of [[questionnaire]] tables")
    return tuple(QuestionnaireItem.from_raw(i, q) for i, q in enumerate(value, 1))


SCHEDULES = ("standard", "adaptive")
"""The values of the ``schedule`` setting."""

ADAPTIVE_SETTINGS = ("schedule", "exploration", "target_width")
"""The adaptive schedule's settings (issue 16 item 3): stored only where given."""


def _checked(key: str, value: Any, want: type) -> Any:
    if key == "schedule":
        if value not in SCHEDULES:
            raise SettingError(key, value, " or ".join(f'"{v}"' for v in SCHEDULES))
        return value
    if key in ("exploration", "target_width"):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        top = 1.0 if key == "exploration" else math.inf
        if not ok or not math.isfinite(value) or not (0.0 <= value <= top):
            what = "a number in [0, 1]" if key == "exploration" else "a finite number >= 0"
            raise SettingError(key, value, what)
        return float(value)
    if want is bool:
        if not isinstance(value, bool):
            raise SettingError(key, value, "true or false")
        return value
    if want is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise SettingError(key, value, "a number >= 0")
        return float(value)
    if want is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SettingError(key, value, "a whole number >= 0")
        return value
    if want is str:
        if not isinstance(value, str) or len(value) > MAX_INSTRUCTIONS_CHARS:
            raise SettingError(
                key, value, f"a string of at most {MAX_INSTRUCTIONS_CHARS:,} characters"
            )
        return value
    if not isinstance(value, list | tuple) or not all(
        isinstance(x, str) and x.strip() for x in value
    ):
        raise SettingError(key, value, "a list of non-empty strings")
    return tuple(value)


DIFFICULTY_DEFAULTS = StudySettings()
"""A difficulty study's defaults."""
ARENA_DEFAULTS = StudySettings(
    kind="arena", overlap=5, min_response_ms=2000, reveal_models=True, render_markdown=True
)
"""An arena study's defaults."""
