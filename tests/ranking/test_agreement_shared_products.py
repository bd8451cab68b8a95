"""agreement_bootstrap multiplies the annotator draws by each label's indicators once and
reuses the products for Fleiss' kappa with abstentions as a category (a label's indicator
is the same either way; issue 13). The result must be bit for bit the one computed with
every product made afresh (the reference: the same function with the reuse turned off).
The pairwise kappa tables, counted in float32, must equal the float64 count likewise."""

from __future__ import annotations

import numpy as np
import pytest

import ranking._agreement_resampling as ar
from ranking.agreement import agreement_bootstrap
from tests.ranking.bits import bits


@pytest.mark.parametrize("resample", ["annotators", "both", ("units", "annotators", "both")])
def test_reused_label_products_give_the_fresh_result(
    monkeypatch: pytest.MonkeyPatch, resample: object
) -> None:
    rng = np.random.default_rng(8)
    data = rng.choice([0.0, 1.0, 2.0], size=(30, 80), p=[0.15, 0.5, 0.35])
    data[rng.random(data.shape) < 0.1] = np.nan  # missing votes
    kwargs = dict(n_boot=200, labels=(1.0, 2.0), abstain=0.0, resample=resample)
    reused = agreement_bootstrap(data, rng=5, **kwargs)
    monkeypatch.setattr(
        ar, "_with_abstain_products", lambda Fa, F, w, n, *design: ar._rater_products(Fa, w)
    )
    fresh = agreement_bootstrap(data, rng=5, **kwargs)
    assert bits(reused) == bits(fresh)
    assert reused.distribution(
        "fleiss_with_abstain", "annotators" if resample != "both" else "both"
    )


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_pairwise_tables_in_float32_equal_the_float64_ones(
    monkeypatch: pytest.MonkeyPatch, weights: object
) -> None:
    """pairwise_cohen_matrix counts its contingency tables in float32 (exact integers up to
    2**24 units); the result must be the float64 computation's (forced with a limit of 0)."""
    import ranking._agreement_point as ap
    from ranking.agreement import pairwise_cohen_matrix

    rng = np.random.default_rng(11)
    data = rng.choice([1.0, 2.0, 3.0], size=(25, 70), p=[0.5, 0.3, 0.2])
    data[rng.random(data.shape) < 0.2] = np.nan
    fast = pairwise_cohen_matrix(data, weights=weights)  # type: ignore[arg-type]
    monkeypatch.setattr(ap, "_EXACT32_UNITS", 0)
    slow = pairwise_cohen_matrix(data, weights=weights)  # type: ignore[arg-type]
    assert bits(fast) == bits(slow)
