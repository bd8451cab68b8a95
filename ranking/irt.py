"""Item response theory for model-by-question binary matrices: 1PL and 2PL.

Two estimators are provided.

* **Penalised joint maximum likelihood** (:func:`fit_1pl`, :func:`fit_2pl`), the
  configuration of the IRT baselines of the EIP paper (App. H.4): abilities,
  difficulties and discriminations are estimated together by L-BFGS-B with
  L2 penalties and box bounds (for the 2PL model, from a projected-Newton
  start; see :func:`fit_2pl`).
* **Marginal maximum likelihood** (:func:`fit_1pl_mml`, :func:`fit_2pl_mml`):
  abilities are integrated out under a standard normal population on a fixed
  quadrature grid, item parameters maximise the marginal likelihood, and each
  person gets an EAP ability with its posterior standard deviation.

Both report item standard errors: from the exact observed information of the
marginal likelihood for MML, and conditional on the abilities (approximate) for
joint ML; see the Notes of each function.

Orientation: the response matrix ``A`` has one row per question (the IRT
"item") and one column per model (the IRT "person"/examinee). ``1`` means
correct, ``0`` wrong and ``NaN`` not administered (dropped from the
likelihood).

The multidimensional model lives in :mod:`ranking.mirt`.

The joint fits live in :mod:`ranking._irt_joint`, the marginal fits in
:mod:`ranking._irt_marginal` and their shared checks and optimiser driver in
:mod:`ranking._irt_common`; this module is the public entry point.
"""

from __future__ import annotations

# The underscored names are re-exported (``x as x``) because the tests check these
# helpers directly; they are not public API.
from ranking._irt_joint import IRTResult, fit_1pl, fit_2pl
from ranking._irt_joint import _jml_1pl_objective as _jml_1pl_objective
from ranking._irt_joint import _jml_2pl_objective as _jml_2pl_objective
from ranking._irt_joint import _jml_2pl_se as _jml_2pl_se
from ranking._irt_marginal import MMLResult, fit_1pl_mml, fit_2pl_mml, marginal_log_likelihood
from ranking._irt_marginal import Quadrature as Quadrature
from ranking._irt_marginal import _collapse_patterns as _collapse_patterns
from ranking._irt_marginal import _marginal as _marginal
from ranking._irt_marginal import _mml_information as _mml_information
from ranking._irt_marginal import _mml_standard_errors as _mml_standard_errors
from ranking._irt_marginal import _quadrature_rule as _quadrature_rule

__all__ = [
    "IRTResult",
    "MMLResult",
    "fit_1pl",
    "fit_1pl_mml",
    "fit_2pl",
    "fit_2pl_mml",
    "marginal_log_likelihood",
]
