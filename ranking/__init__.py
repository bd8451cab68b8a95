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
from ranking.baselines import accuracy, simple_rank, weighted_accuracy
from ranking.compare import kendall_tau, rank_displacement, spearman_rho
from ranking.eip import EIPResult, eip
from ranking.errors import (
    ConvergenceError,
    DegenerateDataError,
    InvalidParameterError,
    LengthMismatchError,
    RankingInputError,
    ShapeError,
)
from ranking.robustness import (
    AlphaSensitivityResult,
    AnchorSamplingResult,
    LeaveModelsOutResult,
    alpha_sensitivity,
    anchor_sampling,
    leave_models_out,
)

__all__ = [
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
    "AlphaSensitivityResult",
    "AnchorSamplingResult",
    "EIPResult",
    "LeaveModelsOutResult",
    "accuracy",
    "alpha_sensitivity",
    "anchor_sampling",
    "eip",
    "kendall_tau",
    "leave_models_out",
    "rank_displacement",
    "simple_rank",
    "spearman_rho",
    "weighted_accuracy",
    "ConvergenceError",
    "DegenerateDataError",
    "InvalidParameterError",
    "LengthMismatchError",
    "RankingInputError",
    "ShapeError",
]
