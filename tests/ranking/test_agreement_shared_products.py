"""agreement_bootstrap multiplies the annotator draws by each label's indicators once and
reuses the products for Fleiss' kappa with abstentions as a category (a label's indicator
is the same either way; issue 13). The result must be bit for bit the one computed with
every product made afresh (the reference: the same function with the reuse turned off)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ranking._agreement_resampling as ar
from ranking.agreement import agreement_bootstrap


def _bits(x: object) -> object:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, [_bits(getattr(x, f.name)) for f in dataclasses.fields(x)])
    if isinstance(x, np.ma.MaskedArray):
        return ("masked", _bits(np.ma.getdata(x)), _bits(np.ma.getmaskarray(x)))
    if isinstance(x, np.ndarray):
        return (str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, list | tuple):
        return [_bits(v) for v in x]
    if isinstance(x, dict):
        return sorted((k, _bits(v)) for k, v in x.items())
    return repr(x)


@pytest.mark.parametrize("resample", ["annotators", "both", ("units", "annotators", "both")])
def test_reused_label_products_give_the_fresh_result(
    monkeypatch: pytest.MonkeyPatch, resample: object
) -> None:
    rng = np.random.default_rng(8)
    data = rng.choice([0.0, 1.0, 2.0], size=(30, 80), p=[0.15, 0.5, 0.35])
    data[rng.random(data.shape) < 0.1] = np.nan  # missing votes
    kwargs = dict(n_boot=200, labels=(1.0, 2.0), abstain=0.0, resample=resample)
    reused = agreement_bootstrap(data, rng=5, **kwargs)
    monkeypatch.setattr(ar, "_with_abstain_products", lambda Fa, F, w, n: ar._rater_products(Fa, w))
    fresh = agreement_bootstrap(data, rng=5, **kwargs)
    assert _bits(reused) == _bits(fresh)
    assert reused.distribution(
        "fleiss_with_abstain", "annotators" if resample != "both" else "both"
    )
