"""Inter-rater agreement: Cohen's kappa, Fleiss' kappa and Krippendorff's alpha.

Every statistic here is a chance-corrected agreement written as

.. math:: 1 - D_o / D_e,

where :math:`D_o` is the observed and :math:`D_e` the chance-expected
disagreement. A statistic is *undefined* when there is nothing to compare (no
unit rated twice) or when :math:`D_e = 0` (every rating falls in one category,
so chance agreement is already perfect). Undefined statistics are never
reported as NaN or 0: scalar results are an :class:`AgreementResult` whose
``value`` is ``None`` and whose ``reason`` says why, and array results are
:class:`numpy.ma.MaskedArray` objects whose undefined entries are masked.

Ratings are numeric codes. Layouts follow Krippendorff's reliability data:
``ratings[r, u]`` is rater ``r``'s code for unit ``u`` and NaN marks a unit the
rater did not rate (a skip). Category order (used by linear and quadratic
weights) is the order of ``labels``, by default the sorted observed codes.

The point statistics live in :mod:`ranking._agreement_point` and the bootstrap in
:mod:`ranking._agreement_resampling`; this module is the public entry point.
"""

from __future__ import annotations

# The underscored names are re-exported (``x as x``) for ranking.alignment, which
# shares these helpers; they are not public API.
from ranking._agreement_point import (
    AgreementResult,
    PairwiseKappaResult,
    RaterConsensusResult,
    cohen_kappa,
    cohen_kappa_table,
    fleiss_kappa,
    krippendorff_alpha,
    leave_one_out_agreement,
    pairwise_cohen_matrix,
    rating_counts,
)
from ranking._agreement_point import Level as Level
from ranking._agreement_point import MaskedFloatArray as MaskedFloatArray
from ranking._agreement_point import Weights as Weights
from ranking._agreement_point import _kappa_from_tables as _kappa_from_tables
from ranking._agreement_point import _masked as _masked
from ranking._agreement_point import _ZeroOne as _ZeroOne
from ranking._agreement_resampling import (
    RESAMPLE_SCHEMES,
    AgreementBootstrapResult,
    AgreementReplicates,
    BootstrapDistribution,
    Resample,
    agreement_bootstrap,
    agreement_replicates,
    fleiss_kappa_complete,
)
from ranking._agreement_resampling import _check_resample as _check_resample

__all__ = [
    "RESAMPLE_SCHEMES",
    "AgreementBootstrapResult",
    "AgreementReplicates",
    "AgreementResult",
    "BootstrapDistribution",
    "PairwiseKappaResult",
    "RaterConsensusResult",
    "Resample",
    "agreement_bootstrap",
    "agreement_replicates",
    "cohen_kappa",
    "cohen_kappa_table",
    "fleiss_kappa",
    "fleiss_kappa_complete",
    "krippendorff_alpha",
    "leave_one_out_agreement",
    "pairwise_cohen_matrix",
    "rating_counts",
]
