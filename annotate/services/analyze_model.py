"""The result of ``annotate analyze``: its sections and the metadata it read.

A module of its own so that :mod:`annotate.services.analyze` (which builds it) and
:mod:`annotate.services.analyze_plots` (which draws it) both import it without
importing each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from annotate.services.estimators import Matrix

__all__ = ["Analysis", "Metadata", "ModelInfo", "Section"]


@dataclass(frozen=True)
class ModelInfo:
    """Optional metadata of one model (``models.csv``)."""

    family: str | None = None
    params_b: float | None = None
    open_weight: bool | None = None
    pool: str | None = None


@dataclass(frozen=True)
class Metadata:
    """Per-question datasets and per-model metadata, each possibly empty."""

    datasets: dict[str, str] = field(default_factory=dict)
    """question id -> dataset (or subject)."""
    models: dict[str, ModelInfo] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    """The files read, said in the report."""


@dataclass
class Section:
    """One analysis: its table, notes and JSON part."""

    key: str
    title: str
    paper: str
    """Which table or figure of the EIP paper it is."""
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    """Cells: str, int, float (NaN when undefined) or None."""
    notes: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    """Column -> why a NaN cell of that column is undefined (said in JSON)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """More JSON (long per-question or per-model arrays), also written as CSVs."""
    extra_csv: dict[str, tuple[list[str], list[list[Any]]]] = field(default_factory=dict)
    skipped: str | None = None
    """Why the analysis did not run (no metadata, too few models, ...)."""
    seconds: float = 0.0

    def undefined_note(self) -> str | None:
        """What a '-' (an undefined number) in the table means, or None when there is none."""
        why: dict[str, None] = {}
        for r in self.rows:
            for col, v in zip(self.columns, r, strict=True):
                if isinstance(v, float) and not math.isfinite(v):
                    why[self.reasons.get(col, "not a finite number for these data")] = None
        return "'-': " + "; ".join(why) if why else None

    def _row(self, r: list[Any]) -> dict[str, Any]:
        """A table row as JSON: a None cell gets its column's reason (NaN gets it later,
        from :func:`annotate.services.json_ready.json_ready`)."""
        row = dict(zip(self.columns, r, strict=True))
        for col, v in list(row.items()):
            if v is None:
                row[f"{col}_reason"] = self.reasons.get(col, "not applicable to this row")
        return row

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "key": self.key,
            "title": self.title,
            "paper": self.paper,
            "seconds": round(self.seconds, 4),
            "skipped": self.skipped,
            "notes": self.notes,
            "columns": self.columns,
            "rows": [self._row(r) for r in self.rows],
        }
        doc.update(self.extra)
        return doc


@dataclass
class Analysis:
    """Every section of one ``annotate analyze`` run."""

    source: str
    matrix: Matrix
    metadata: Metadata
    sections: list[Section]
    settings: dict[str, Any]
    anchors: list[str] | None = None
    """Question ids of the exported anchor sample (``--export-anchors``)."""

    def as_dict(self) -> dict[str, Any]:
        from annotate.services.json_ready import json_ready

        reasons = {
            f"sections.{s.key}.rows.{col}": why
            for s in self.sections
            for col, why in s.reasons.items()
        }
        doc = {
            "source": self.source,
            "questions": len(self.matrix.questions),
            "models": len(self.matrix.models),
            "metadata": {
                "files": list(self.metadata.sources),
                "questions_with_dataset": sum(
                    q in self.metadata.datasets for q in self.matrix.questions
                ),
                "models_with_metadata": sum(m in self.metadata.models for m in self.matrix.models),
            },
            "settings": self.settings,
            "sections": {s.key: s.as_dict() for s in self.sections},
        }
        return json_ready(doc, reasons=reasons)  # type: ignore[no-any-return]
