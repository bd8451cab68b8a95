"""JSON documents that are valid under every outcome: NaN and infinities become null."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def json_ready(obj: Any, *, where: str = "", reasons: dict[str, str] | None = None) -> Any:
    """A copy of ``obj`` in which every non-finite number is None.

    Dicts, lists and tuples are walked; numpy scalars become Python numbers. When
    a dict's value ``key`` is a non-finite number and the dict has no
    ``key + "_reason"``, one is added saying the value is undefined, so a
    reader knows why it is null (``reasons`` maps dotted paths to better wording).

    Examples
    --------
    >>> json_ready({"a": float("nan"), "b": [1.0, float("inf")]})
    {'a': None, 'b': [1.0, None], 'a_reason': 'not a finite number for these data'}
    """
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        extra: dict[str, str] = {}
        for k, v in obj.items():
            path = f"{where}.{k}" if where else str(k)
            if _bad(v):
                why = (reasons or {}).get(path, "not a finite number for these data")
                if f"{k}_reason" not in obj:
                    extra[f"{k}_reason"] = why
                out[k] = None
            else:
                out[k] = json_ready(v, where=path, reasons=reasons)
        out.update(extra)
        return out
    if isinstance(obj, list | tuple):
        return [None if _bad(v) else json_ready(v, where=where, reasons=reasons) for v in obj]
    if isinstance(obj, np.generic):
        return json_ready(obj.item(), where=where, reasons=reasons)
    if isinstance(obj, np.ndarray):
        return json_ready(obj.tolist(), where=where, reasons=reasons)
    return obj


def _bad(v: Any) -> bool:
    if isinstance(v, np.generic):
        v = v.item()
    return isinstance(v, float) and not math.isfinite(v)


def check_json(obj: Any) -> Any:
    """``obj`` after :func:`json_ready`, checked with ``json.dumps(allow_nan=False)``.

    Raises
    ------
    ValueError
        If a non-finite number is left (a bug).
    """
    ready = json_ready(obj)
    json.dumps(ready, allow_nan=False, default=str)
    return ready
