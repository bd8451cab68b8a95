"""``bits``: a result in a form that compares equal only when it is the same bit for bit
(the tests of issue 13's speed-ups, whose results must not change)."""

from __future__ import annotations

import dataclasses

import numpy as np


def bits(x: object) -> object:
    """A comparable form of a result: dataclasses field by field, arrays by dtype, shape,
    bytes (and mask), sequences and dicts item by item, anything else by ``repr`` (floats
    exact)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, [bits(getattr(x, f.name)) for f in dataclasses.fields(x)])
    if isinstance(x, np.ma.MaskedArray):
        return ("masked", bits(np.ma.getdata(x)), bits(np.ma.getmaskarray(x)))
    if isinstance(x, np.ndarray):
        return (str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, list | tuple):
        return [bits(v) for v in x]
    if isinstance(x, dict):
        return sorted((k, bits(v)) for k, v in x.items())
    return repr(x)
