"""ranking: statistics for human evaluation of LLMs (numpy and scipy only).

Arrays in, plain results out. This package never touches files, databases or
the terminal, and never imports :mod:`annotate`.
"""

from __future__ import annotations

from ranking.agreement import (
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
from ranking.alignment import (
    AlignmentReport,
    ConsensusResult,
    HumanScaleResult,
    alignment_report,
    human_difficulty_scale,
    predict_harder,
    vote_consensus,
)
from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    LengthMismatchError,
    RankingInputError,
    ShapeError,
)
from ranking.irt import (
    IRTResult,
    MMLResult,
    fit_1pl,
    fit_1pl_mml,
    fit_2pl,
    fit_2pl_mml,
    marginal_log_likelihood,
)
from ranking.mirt import MIRTResult, fit_mirt


__all__ = [
    "IRTResult",
    "MMLResult",
    "fit_1pl",
    "fit_1pl_mml",
    "fit_2pl",
    "fit_2pl_mml",
    "marginal_log_likelihood",
    "MIRTResult",
    "fit_mirt",
    "AgreementResult",
    "AlignmentReport",
    "ConsensusResult",
    "HumanScaleResult",
    "PairwiseKappaResult",
    "RaterConsensusResult",
    "alignment_report",
    "cohen_kappa",
    "cohen_kappa_table",
    "fleiss_kappa",
    "human_difficulty_scale",
    "krippendorff_alpha",
    "leave_one_out_agreement",
    "pairwise_cohen_matrix",
    "predict_harder",
    "rating_counts",
    "vote_consensus",
    "ConvergenceError",
    "DegenerateDataError",
    "InvalidParameterError",
    "LengthMismatchError",
    "RankingInputError",
    "ShapeError",
]
