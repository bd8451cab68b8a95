"""Responses that give away which model wrote them.

A blind arena vote is not blind when a response says "As GPT-4, I ..." or
"I am Claude, made by Anthropic". The Chatbot Arena drops such battles from
its leaderboard (FastChat's ``clean_battle_data.py`` looks for identity words
in the conversation); this module does the same for a study:

- :class:`IdentityDetector` finds, case-insensitively and on word boundaries,
  any model name of the study (and a model's family, ``claude`` of
  ``claude-3-opus``) or any identity phrase (:data:`DEFAULT_IDENTITY_PHRASES`,
  extended by the study setting ``identity_phrases`` and the command line's
  ``--identity-phrase``) in a response;
- :func:`self_identifying_battles` lists the battles of a study with such a
  response; ``annotate import`` reports them, ``annotate rate --study``
  leaves them out of the ratings by default, the monitor and the report count
  them.

Names too short or too common to identify anything (``a``, ``base``,
``chat``, fewer than 3 characters, numbers) are not searched for; the scan
says which were skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlmodel import Session

from annotate.errors import StudyNotFoundError
from annotate.names import one_line
from annotate.store import repo

__all__ = [
    "DEFAULT_IDENTITY_PHRASES",
    "IdentityDetector",
    "IdentityHit",
    "IdentityScan",
    "import_notes",
    "self_identifying_battles",
]

DEFAULT_IDENTITY_PHRASES: tuple[str, ...] = (
    "as an AI developed by",
    "as an AI language model developed by",
    "as a language model developed by",
    "I am a large language model trained by",
    "I'm a large language model trained by",
    "trained by OpenAI",
    "trained by Google",
    "trained by Anthropic",
    "trained by Meta",
    "developed by OpenAI",
    "developed by Google",
    "developed by Google DeepMind",
    "developed by Anthropic",
    "developed by Meta",
    "developed by Mistral AI",
    "created by OpenAI",
    "created by Anthropic",
    "created by Google",
    "made by Anthropic",
    "made by OpenAI",
    "I am ChatGPT",
    "I'm ChatGPT",
    "I am Claude",
    "I'm Claude",
    "I am Gemini",
    "I'm Gemini",
    "I am Bard",
    "I'm Bard",
    "I am Llama",
    "I'm Llama",
    "I am Mistral",
    "I am Qwen",
    "I'm Qwen",
    "I am DeepSeek",
    "my name is ChatGPT",
    "my name is Claude",
    "my name is Gemini",
    "my name is Bard",
    "my name is Llama",
)
"""Phrases by which a response names its maker or itself (matched case-insensitively)."""

GENERIC_NAMES = frozenset(
    {
        "ai",
        "answer",
        "assistant",
        "base",
        "baseline",
        "bot",
        "chat",
        "default",
        "human",
        "instruct",
        "large",
        "medium",
        "mini",
        "model",
        "none",
        "other",
        "reference",
        "response",
        "small",
        "test",
        "the",
        "user",
    }
)
"""Model names (or families) too common in ordinary text to identify a model."""

MIN_NAME_LENGTH = 3
"""Shorter model names (``a``, ``b``, ``m1``) are not searched for."""

_SEPARATORS = re.compile(r"[-_ :/.@]")
_ORG_PREFIX = re.compile(r"[\w.-]+/([\w.-]+)")


def _searchable(name: str) -> bool:
    n = name.strip().casefold()
    return len(n) >= MIN_NAME_LENGTH and n not in GENERIC_NAMES and not n.isdigit()


def name_terms(model: str) -> list[str]:
    """The words that name ``model`` in a response: the name, its base and its family.

    The base drops an organisation prefix from an ``org/model`` name
    (``meta-llama/Llama-2-7b`` -> ``Llama-2-7b``); the family is the base's first
    part before ``-``, ``_``, ``:``, ``.`` or a space when that part is at least 4 letters
    (``claude-3-opus`` -> ``claude``; ``gpt-4`` has no family: ``gpt`` is too short).
    Generic or short terms are left out.

    Examples
    --------
    >>> name_terms("meta-llama/Llama-2-7b-chat")
    ['meta-llama/Llama-2-7b-chat', 'Llama-2-7b-chat', 'Llama']
    >>> name_terms("gpt-4")
    ['gpt-4']
    >>> name_terms("a")
    []
    """
    name = model.strip()
    org = _ORG_PREFIX.fullmatch(name)
    base = org.group(1) if org else name
    family = _SEPARATORS.split(base, maxsplit=1)[0]
    terms = [name, base]
    if family != base and len(family) >= 4 and family.isalpha():
        terms.append(family)
    out: list[str] = []
    for t in terms:
        if _searchable(t) and t.casefold() not in {o.casefold() for o in out}:
            out.append(t)
    return out


def _pattern(term: str) -> str:
    # Word boundaries that also work for names starting or ending with punctuation.
    return r"(?<![\w])" + re.escape(term) + r"(?![\w])"


class IdentityDetector:
    """Finds model names and identity phrases in response texts.

    Parameters
    ----------
    models : iterable of str
        The study's model names.
    phrases : sequence of str
        Identity phrases (default :data:`DEFAULT_IDENTITY_PHRASES`).
    extra_phrases : iterable of str
        More phrases (the study setting ``identity_phrases``, ``--identity-phrase``).

    Examples
    --------
    >>> d = IdentityDetector(["gpt-4", "claude-3-opus", "a"])
    >>> d.find("As GPT-4, I think so.")
    'gpt-4'
    >>> d.find("Claude here.")
    'claude'
    >>> d.find("This is a gpt-4o answer") is None
    True
    >>> d.find("I was trained by Google.")
    'trained by Google'
    >>> d.skipped
    ('a',)
    """

    def __init__(
        self,
        models: Iterable[str],
        phrases: Sequence[str] = DEFAULT_IDENTITY_PHRASES,
        extra_phrases: Iterable[str] = (),
    ) -> None:
        terms: dict[str, str] = {}
        skipped: list[str] = []
        for m in sorted(set(models)):
            found = name_terms(m)
            if not found:
                skipped.append(m)
            for t in found:
                terms.setdefault(t.casefold(), t)
        for p in (*phrases, *extra_phrases):
            p = " ".join(str(p).split())
            if p:
                terms.setdefault(p.casefold(), p)
        self.skipped: tuple[str, ...] = tuple(skipped)
        """Model names not searched for (too short or too common)."""
        self.terms: tuple[str, ...] = tuple(terms.values())
        """Every name and phrase searched for."""
        # Longest first, so "claude-3-opus" is reported rather than "claude".
        ordered = sorted(self.terms, key=lambda t: (-len(t), t.casefold()))
        body = "|".join(_pattern(t).replace(r"\ ", r"\s+") for t in ordered)  # a phrase may wrap
        self._regex = re.compile(body, re.IGNORECASE) if body else None
        self._canonical = {t.casefold(): t for t in self.terms}

    def find(self, text: str | None) -> str | None:
        """The first name or phrase in ``text`` (as configured), or None."""
        if not text or self._regex is None:
            return None
        m = self._regex.search(text)
        if m is None:
            return None
        found = " ".join(m.group(0).split()).casefold()
        return self._canonical.get(found, m.group(0))


@dataclass(frozen=True)
class IdentityHit:
    """One battle with a self-identifying response."""

    battle: str
    """The battle's key (item id)."""
    model: str
    """The model whose response gives a name away."""
    match: str
    """The name or phrase found."""


@dataclass(frozen=True)
class IdentityScan:
    """The self-identifying battles of a study."""

    study: str
    hits: tuple[IdentityHit, ...]
    """One per battle (the first response found), in study order."""
    skipped_names: tuple[str, ...] = ()
    """Model names not searched for (too short or too common)."""

    @property
    def battles(self) -> frozenset[str]:
        """Keys of the self-identifying battles."""
        return frozenset(h.battle for h in self.hits)

    def __len__(self) -> int:
        return len(self.hits)


def self_identifying_battles(
    engine: Engine, study: str, *, extra_phrases: Iterable[str] = ()
) -> IdentityScan:
    """The battles of arena ``study`` in which a response names a model or its maker.

    Parameters
    ----------
    engine : Engine
        The store.
    study : str
        Study name; a difficulty study has no battles (an empty scan).
    extra_phrases : iterable of str
        Phrases added to the defaults and to the study's ``identity_phrases``.

    Raises
    ------
    StudyNotFoundError
        If there is no such study.
    """
    with Session(engine) as s:
        st = repo.get_study(s, study)
        if st is None:
            raise StudyNotFoundError(study, repo.study_names(s))
        if st.kind != "arena":
            return IdentityScan(st.name, ())
        responses = repo.arena_response_texts(s, st.id)
        if not responses:  # battle records without texts (a Chatbot Arena log)
            return IdentityScan(st.name, ())
        battles = repo.arena_battle_prompts(s, st.id)
    models = {m for _, _, a, b in battles for m in (a, b)}
    detector = IdentityDetector(
        models, extra_phrases=(*st.settings.identity_phrases, *extra_phrases)
    )
    found: dict[tuple[int, str], str] = {}
    for prompt, model, body in responses:
        match = detector.find(body)
        if match is not None:
            found[(prompt, model)] = match
    hits: list[IdentityHit] = []
    for key, battle_prompt, a, b in battles:
        if battle_prompt is None:
            continue
        for m in (a, b):
            match = found.get((battle_prompt, m))
            if match is not None:
                hits.append(IdentityHit(key, m, match))
                break
    return IdentityScan(st.name, tuple(hits), detector.skipped)


def describe(scan: IdentityScan, *, shown: int = 5) -> str | None:
    """One line about a scan for people (names sanitised), or None when it found nothing."""
    if not scan.hits:
        return None
    first = ", ".join(one_line(h.battle) for h in scan.hits[:shown])
    more = f", ... ({len(scan.hits) - shown} more)" if len(scan.hits) > shown else ""
    return (
        f"study {one_line(scan.study)}: {len(scan.hits)} battle(s) with a response that names "
        f"a model or its maker ({first}{more}); they are left out of the ratings unless "
        "`annotate rate --include-self-identifying`"
    )


def import_notes(engine: Engine, studies: Iterable[str]) -> list[str]:
    """Notes for ``annotate import``: the self-identifying battles of each study named."""
    notes: list[str] = []
    for name in studies:
        line = describe(self_identifying_battles(engine, name))
        if line is not None:
            notes.append(line)
    return notes
