"""The analyses of the am-ELO paper (Liu et al., 2025, sec. 5) on any battle data.

Each function takes battles as parallel arrays (``model_a``, ``model_b``,
``annotator``, ``outcome`` with 1 = ``model_a`` won, 0 = ``model_b`` won, 0.5 =
tie) and returns plain numbers; undefined values are NaN here and become null
with a reason in the callers' JSON.

* :func:`annotator_filter` and :func:`battle_statistics` -- Table 1 (the data set
  after dropping annotators with fewer than 50 records).
* :func:`heldout_prediction` -- Table 2: MSE and AUC of Elo, m-ELO and am-ELO on
  held-out votes (k-fold), with :func:`roc_auc` and :func:`squared_error`.
* :func:`model_losses` -- Fig. 3: each model's mean log-likelihood loss under each
  method, and the ratings scaled to [0, 1].
* :func:`elo_order_dependence` -- Fig. 1: the spread of online Elo over shuffled
  orders of the same votes.
* :func:`am_elo_descent` -- sec. 5.4 / Fig. 5: am-ELO fitted by gradient descent from
  random starts with and without the normalisation of eq. 7, and the consistency
  of the rankings the starts reach.
* :func:`perturbed_abilities` -- Fig. 6 (scatter): the am-ELO abilities of normal
  and perturbed annotators in simulated arenas.

References
----------
Liu, Z., Li, J., Zhuang, Y., Liu, Q., Shen, S., Ouyang, J., Cheng, M. and Wang, S.
(2025). am-ELO: A Stable Framework for Arena-based LLM Evaluation. ICML 2025.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import expit, log_expit

from ranking._validation import make_rng
from ranking.errors import ConvergenceError, InvalidParameterError, RankingInputError
from ranking.pairwise import ELO_C, am_elo, m_elo
from ranking.simulation import _elo_over_orders, _paper_fit, _perturb_share, simulate_arena
from ranking.types import BoolArray, FloatArray, IntArray, RNGLike

__all__ = [
    "BattleStatistics",
    "DescentResult",
    "HeldoutResult",
    "ModelLosses",
    "OrderDependence",
    "PerturbedAbilities",
    "am_elo_descent",
    "annotator_filter",
    "battle_statistics",
    "elo_order_dependence",
    "elo_probability",
    "heldout_prediction",
    "model_losses",
    "perturbed_abilities",
    "roc_auc",
    "squared_error",
    "vote_log_loss",
]

METHODS = ("elo", "m-elo", "am-elo")
"""The three estimators compared in the paper's Tables 2 and Fig. 3."""


def _ints(x: npt.ArrayLike) -> IntArray:
    return np.asarray(x, dtype=np.int64).reshape(-1)


def _floats(x: npt.ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64).reshape(-1)


# --------------------------------------------------------------------------- Table 1


def annotator_filter(annotator: npt.ArrayLike, min_records: int) -> BoolArray:
    """Votes of the annotators with at least ``min_records`` votes (the paper: 50).

    Examples
    --------
    >>> annotator_filter([0, 0, 1, 2, 2, 2], 2).tolist()
    [True, True, False, True, True, True]
    """
    k = _ints(annotator)
    if min_records < 0:
        raise InvalidParameterError(f"min_records must be >= 0, got {min_records}")
    if k.size == 0:
        return np.zeros(0, dtype=bool)
    counts = np.bincount(k)
    keep: BoolArray = counts[k] >= min_records
    return keep


@dataclass(frozen=True)
class BattleStatistics:
    """The rows of the paper's Table 1."""

    annotators: int
    """Annotators with at least one record."""
    models: int
    """Models in at least one record."""
    records: int
    """Records (votes)."""
    per_annotator: float
    """Records per annotator."""
    per_model: float
    """Records per model (records / models, the paper's definition: 4321 / 20 = 216.05)."""
    per_pair: float
    """Records per model pair (records / C(models, 2): 4321 / 190 = 22.74)."""
    pairs_observed: int
    """Distinct unordered model pairs with a record."""
    per_observed_pair: float
    """Records per observed pair."""


def battle_statistics(
    model_a: npt.ArrayLike, model_b: npt.ArrayLike, annotator: npt.ArrayLike
) -> BattleStatistics:
    """Table 1 of the paper: counts of annotators, models and records, and their ratios.

    Examples
    --------
    >>> s = battle_statistics([0, 0, 1, 2], [1, 2, 0, 1], [5, 5, 7, 7])
    >>> s.annotators, s.models, s.records, s.per_model, s.per_pair, s.pairs_observed
    (2, 3, 4, 1.3333333333333333, 1.3333333333333333, 3)

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, Table 1.
    """
    a, b, k = _ints(model_a), _ints(model_b), _ints(annotator)
    n = int(a.size)
    models = int(np.unique(np.concatenate([a, b])).size)
    annotators = int(np.unique(k).size)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pairs = int(np.unique(np.stack([lo, hi], axis=1), axis=0).shape[0]) if n else 0
    possible = models * (models - 1) / 2
    return BattleStatistics(
        annotators=annotators,
        models=models,
        records=n,
        per_annotator=n / annotators if annotators else math.nan,
        per_model=n / models if models else math.nan,
        per_pair=n / possible if possible else math.nan,
        pairs_observed=pairs,
        per_observed_pair=n / pairs if pairs else math.nan,
    )


# --------------------------------------------------------------------------- metrics


def roc_auc(labels: npt.ArrayLike, scores: npt.ArrayLike) -> float:
    """Area under the ROC curve (Mann-Whitney form, ties in ``scores`` count half).

    NaN when ``labels`` holds only one class.

    Examples
    --------
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    from scipy.stats import rankdata

    y = np.asarray(labels).reshape(-1).astype(bool)
    s = _floats(scores)
    n1 = int(y.sum())
    n0 = int(y.size - n1)
    if n1 == 0 or n0 == 0:
        return math.nan
    r = rankdata(s)
    return float((r[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def squared_error(outcome: npt.ArrayLike, probability: npt.ArrayLike) -> float:
    """Mean squared error ``mean((W - P)**2)`` (the Brier score; ties are W = 0.5).

    Examples
    --------
    >>> squared_error([1, 0, 0.5], [0.8, 0.4, 0.5])
    0.06666666666666667
    """
    w, p = _floats(outcome), _floats(probability)
    return float(np.mean((w - p) ** 2)) if w.size else math.nan


def vote_log_loss(outcome: npt.ArrayLike, probability: npt.ArrayLike) -> FloatArray:
    """Per-vote negative log-likelihood ``-(W ln P + (1 - W) ln(1 - P))`` (ties half each).

    Examples
    --------
    >>> vote_log_loss([1.0, 0.5], [0.5, 0.5]).round(4).tolist()
    [0.6931, 0.6931]
    """
    w, p = _floats(outcome), np.clip(_floats(probability), 1e-15, 1 - 1e-15)
    out: FloatArray = -(w * np.log(p) + (1.0 - w) * np.log1p(-p))
    return out


def elo_probability(r_a: npt.ArrayLike, r_b: npt.ArrayLike) -> FloatArray:
    """``P(a beats b) = 1 / (1 + 10 ** ((R_b - R_a) / 400))`` (eq. 1)."""
    out: FloatArray = expit(ELO_C * (_floats(r_a) - _floats(r_b)))
    return out


# --------------------------------------------------------------------------- Elo over orders


@dataclass(frozen=True)
class OrderDependence:
    """Online Elo over shuffled orders of the same votes (the paper's Fig. 1)."""

    mean: FloatArray
    """Mean rating per model over the shuffles, shape (n_models,)."""
    sd: FloatArray
    """Standard deviation over the shuffles (the error bar of Fig. 1)."""
    minimum: FloatArray
    """Lowest rating over the shuffles (the error line of Fig. 1)."""
    maximum: FloatArray
    """Highest rating over the shuffles."""
    best_rank: IntArray
    """Best rank (1 = top) a model reached over the shuffles."""
    worst_rank: IntArray
    """Worst rank over the shuffles."""
    shuffles: int
    """Number of shuffled orders."""
    k: float
    """K-factor."""


def elo_order_dependence(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    shuffles: int = 1000,
    k: float = 4.0,
    rng: RNGLike = None,
) -> OrderDependence:
    """Spread of online Elo ratings over ``shuffles`` random orders of the same votes.

    Each shuffle runs the online update (Algorithm 1, K = ``k``, scale 400, start
    1000) over a random permutation of the votes; the paper (Fig. 1) shows the
    mean, the standard deviation and the range per model. m-ELO and am-ELO do not
    depend on the order (their spread is zero).

    Examples
    --------
    >>> od = elo_order_dependence([0, 1, 0], [1, 2, 2], [1, 1, 0], shuffles=6, k=32, rng=0)
    >>> bool(od.sd.max() > 0), od.shuffles
    (True, 6)

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, Fig. 1 and sec. 5.2 (1000 shuffles).
    """
    a, b, w = _ints(model_a), _ints(model_b), _floats(outcome)
    if shuffles < 2:
        raise InvalidParameterError(f"shuffles must be at least 2, got {shuffles}")
    if a.size == 0:
        raise RankingInputError("there are no votes")
    n = int(n_models if n_models is not None else max(a.max(), b.max()) + 1)
    r = _elo_over_orders(a, b, w, n, shuffles, make_rng(rng), float(k))
    ranks = (np.argsort(np.argsort(-r, axis=1, kind="stable"), axis=1) + 1).astype(np.int64)
    return OrderDependence(
        mean=r.mean(axis=0),
        sd=r.std(axis=0, ddof=1),
        minimum=r.min(axis=0),
        maximum=r.max(axis=0),
        best_rank=ranks.min(axis=0),
        worst_rank=ranks.max(axis=0),
        shuffles=int(shuffles),
        k=float(k),
    )


# --------------------------------------------------------------------------- fits


def _compact(x: IntArray) -> tuple[IntArray, IntArray]:
    """(unique values, codes) of ``x``."""
    u, inv = np.unique(x, return_inverse=True)
    return u, inv.astype(np.int64).reshape(-1)


@dataclass(frozen=True)
class _MethodFit:
    """One method's fit on all votes given: its ratings, or the error of its failed fit."""

    ratings: FloatArray
    """Ratings (NaN when the fit failed)."""
    discriminations: FloatArray | None
    """am-ELO's annotator abilities; None for Elo and m-ELO."""
    error: str | None = None

    def probability(self, a: IntArray, b: IntArray, k: IntArray) -> FloatArray:
        """P(``a`` beats ``b``) for annotators ``k`` (eq. 1; eq. 4 for am-ELO)."""
        r = self.ratings
        if self.discriminations is None:
            return elo_probability(r[a], r[b])
        out: FloatArray = expit(self.discriminations[k] * ELO_C * (r[a] - r[b]))
        return out


def _fit_methods(
    a: IntArray,
    b: IntArray,
    k: IntArray,
    w: FloatArray,
    n: int,
    elo_shuffles: int,
    elo_k: float,
    gen: np.random.Generator,
    ability_prior_sd: float | None,
) -> tuple[_MethodFit, _MethodFit, _MethodFit]:
    """Elo (mean over ``elo_shuffles`` orders), m-ELO and am-ELO fitted on the votes."""
    failed = np.full(n, np.nan)
    elo_fit = _MethodFit(_elo_over_orders(a, b, w, n, elo_shuffles, gen, elo_k).mean(axis=0), None)
    try:
        m_fit = _MethodFit(m_elo(a, b, w, n_models=n).ratings, None)
    except (RankingInputError, ConvergenceError) as err:
        m_fit = _MethodFit(failed, None, str(err))
    try:
        fit = am_elo(
            a, b, k, w, n_models=n, n_annotators=int(k.max() + 1),
            ability_prior_sd=ability_prior_sd,
        )  # fmt: skip
        am_fit = _MethodFit(fit.ratings, fit.discriminations)
    except (RankingInputError, ConvergenceError) as err:
        am_fit = _MethodFit(failed, None, str(err))
    return elo_fit, m_fit, am_fit


def _fit_probabilities(
    a: IntArray,
    b: IntArray,
    k: IntArray,
    w: FloatArray,
    ta: IntArray,
    tb: IntArray,
    tk: IntArray,
    *,
    elo_shuffles: int,
    elo_k: float,
    gen: np.random.Generator,
    ability_prior_sd: float | None,
) -> dict[str, tuple[FloatArray, str | None]]:
    """Fit each method on (a, b, k, w) and predict P(a wins) for the test votes.

    Indices are already compact over the training set; test votes must only use
    models and annotators present in training. A failed fit gives NaN and the reason.
    """
    n = int(max(a.max(), b.max()) + 1)
    fits = _fit_methods(a, b, k, w, n, elo_shuffles, elo_k, gen, ability_prior_sd)
    out: dict[str, tuple[FloatArray, str | None]] = {}
    for m, label, fit in zip(METHODS, ("Elo", "m-ELO", "am-ELO"), fits, strict=True):
        if fit.error is not None:
            out[m] = (np.full(ta.size, np.nan), f"{label} fit failed: {fit.error}")
        else:
            out[m] = (fit.probability(ta, tb, tk), None)
    return out


@dataclass(frozen=True)
class HeldoutResult:
    """Held-out prediction of votes (the paper's Table 2)."""

    methods: tuple[str, ...]
    """``("elo", "m-elo", "am-elo")``."""
    mse: FloatArray
    """MSE per method and fold, shape (n_methods, n_folds); NaN where a fit failed."""
    auc: FloatArray
    """AUC per method and fold, shape (n_methods, n_folds)."""
    n_test: IntArray
    """Held-out votes scored per fold (MSE), shape (n_folds,)."""
    n_test_decisive: IntArray
    """Held-out decisive (not tie) votes per fold (AUC), shape (n_folds,)."""
    n_unseen: IntArray
    """Held-out votes not scored per fold because their annotator or a model had no
    training vote, shape (n_folds,)."""
    failures: tuple[tuple[str, int, str], ...]
    """``(method, fold, reason)`` of each failed fit."""
    folds: int
    """Number of folds."""
    seed: int
    """Seed of the split and of the Elo shuffles."""
    elo_shuffles: int
    """Shuffled orders averaged for online Elo."""

    def summary(self) -> dict[str, dict[str, float]]:
        """``{method: {mse_mean, mse_sd, auc_mean, auc_sd}}`` over the folds that fitted."""
        out: dict[str, dict[str, float]] = {}
        for i, m in enumerate(self.methods):
            row: dict[str, float] = {}
            for name, x in (("mse", self.mse[i]), ("auc", self.auc[i])):
                ok = x[np.isfinite(x)]
                row[f"{name}_mean"] = float(ok.mean()) if ok.size else math.nan
                row[f"{name}_sd"] = float(ok.std(ddof=1)) if ok.size > 1 else math.nan
            out[m] = row
        return out


def heldout_prediction(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    folds: int = 5,
    seed: int = 0,
    elo_shuffles: int = 100,
    elo_k: float = 4.0,
    ability_prior_sd: float | None = None,
) -> HeldoutResult:
    """MSE and AUC of Elo, m-ELO and am-ELO on held-out votes (k-fold cross-validation).

    The votes are split at random (seeded by ``seed``) into ``folds`` folds of equal
    size (within one). For each fold every method is fitted on the other folds and
    predicts ``P`` (``model_a`` wins) for the held-out votes: Elo from the mean of the
    online ratings over ``elo_shuffles`` shuffled orders (as the paper averages over
    shuffles), m-ELO from its maximum-likelihood ratings, am-ELO from its ratings and
    the voting annotator's ability (eq. 4). MSE is ``mean((W - P)**2)`` over the
    held-out votes (a tie is W = 0.5); AUC is over the held-out decisive votes (label
    W = 1). A held-out vote whose annotator or one of whose models has no training
    vote cannot be predicted by am-ELO; it is left out for every method and counted
    in ``n_unseen``.

    Returns
    -------
    HeldoutResult
        Per-fold MSE and AUC; :meth:`HeldoutResult.summary` gives mean and sd.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> a = rng.integers(0, 4, 400); b = (a + rng.integers(1, 4, 400)) % 4
    >>> w = (rng.random(400) < 1 / (1 + np.exp(b - a))).astype(float)
    >>> res = heldout_prediction(a, b, rng.integers(0, 3, 400), w, folds=4, elo_shuffles=5)
    >>> res.mse.shape, bool(np.all(res.auc > 0.6))
    ((3, 4), True)

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, Table 2.
    """
    a, b, k, w = _ints(model_a), _ints(model_b), _ints(annotator), _floats(outcome)
    n = int(a.size)
    if not 2 <= folds <= n:
        raise InvalidParameterError(f"folds must be between 2 and the {n} votes, got {folds}")
    gen = make_rng(seed)
    fold_of = np.empty(n, dtype=np.int64)
    fold_of[gen.permutation(n)] = np.arange(n) % folds
    mse = np.full((len(METHODS), folds), np.nan)
    auc = np.full((len(METHODS), folds), np.nan)
    n_test = np.zeros(folds, dtype=np.int64)
    n_dec = np.zeros(folds, dtype=np.int64)
    n_unseen = np.zeros(folds, dtype=np.int64)
    failures: list[tuple[str, int, str]] = []
    for f in range(folds):
        tr, te = fold_of != f, fold_of == f
        models, _ = _compact(np.concatenate([a[tr], b[tr]]))
        anns, k_tr = _compact(k[tr])
        seen = np.isin(a[te], models) & np.isin(b[te], models) & np.isin(k[te], anns)
        n_unseen[f] = int((~seen).sum())
        ta = np.searchsorted(models, a[te][seen])
        tb = np.searchsorted(models, b[te][seen])
        tk = np.searchsorted(anns, k[te][seen])
        wt = w[te][seen]
        n_test[f] = int(wt.size)
        dec = wt != 0.5
        n_dec[f] = int(dec.sum())
        probs = _fit_probabilities(
            np.searchsorted(models, a[tr]),
            np.searchsorted(models, b[tr]),
            k_tr,
            w[tr],
            ta,
            tb,
            tk,
            elo_shuffles=elo_shuffles,
            elo_k=elo_k,
            gen=gen,
            ability_prior_sd=ability_prior_sd,
        )
        for i, m in enumerate(METHODS):
            p, why = probs[m]
            if why is not None:
                failures.append((m, f, why))
                continue
            mse[i, f] = squared_error(wt, p)
            auc[i, f] = roc_auc(wt[dec] == 1.0, p[dec])
    return HeldoutResult(
        methods=METHODS,
        mse=mse,
        auc=auc,
        n_test=n_test,
        n_test_decisive=n_dec,
        n_unseen=n_unseen,
        failures=tuple(failures),
        folds=int(folds),
        seed=int(seed),
        elo_shuffles=int(elo_shuffles),
    )


# --------------------------------------------------------------------------- Fig. 3


@dataclass(frozen=True)
class ModelLosses:
    """Per-model loss and scaled ratings of each method (the paper's Fig. 3)."""

    methods: tuple[str, ...]
    """``("elo", "m-elo", "am-elo")``."""
    loss: FloatArray
    """Mean negative log-likelihood of each model's votes, shape (n_methods, n_models)."""
    overall: FloatArray
    """Mean negative log-likelihood over all votes, shape (n_methods,)."""
    ratings: FloatArray
    """Ratings, shape (n_methods, n_models) (Elo: mean over the shuffles)."""
    scaled: FloatArray
    """Ratings scaled to [0, 1] per method (min-max: Fig. 3's line chart)."""
    votes: IntArray
    """Votes per model, shape (n_models,)."""
    failures: tuple[tuple[str, str], ...]
    """``(method, reason)`` of each failed fit (its rows are NaN)."""


def _per_model_mean(a: IntArray, b: IntArray, x: FloatArray, n: int) -> tuple[FloatArray, IntArray]:
    votes = np.bincount(a, minlength=n) + np.bincount(b, minlength=n)
    s = np.bincount(a, weights=x, minlength=n) + np.bincount(b, weights=x, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean: FloatArray = s / votes
    return mean, votes.astype(np.int64)


def model_losses(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    n_models: int | None = None,
    elo_shuffles: int = 1000,
    elo_k: float = 4.0,
    rng: RNGLike = None,
    ability_prior_sd: float | None = None,
) -> ModelLosses:
    """Each model's mean log-likelihood loss under Elo, m-ELO and am-ELO fitted on all votes.

    A vote counts for both of its models: a model's loss is the mean of
    :func:`vote_log_loss` over the votes it took part in. Elo uses the mean of the
    online ratings over ``elo_shuffles`` shuffled orders (the paper: 1000).

    Examples
    --------
    >>> ml = model_losses([0, 0, 1, 1, 2], [1, 2, 2, 0, 0], [0, 1, 0, 1, 0],
    ...                   [1, 1, 1, 0, 0.5], elo_shuffles=10, rng=0)
    >>> ml.loss.shape, ml.votes.tolist()
    ((3, 3), [4, 3, 3])

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, Fig. 3 and sec. 5.3.
    """
    a, b, k, w = _ints(model_a), _ints(model_b), _ints(annotator), _floats(outcome)
    if a.size == 0:
        raise RankingInputError("there are no votes")
    n = int(n_models if n_models is not None else max(a.max(), b.max()) + 1)
    gen = make_rng(rng)
    loss = np.full((3, n), np.nan)
    overall = np.full(3, np.nan)
    ratings = np.full((3, n), np.nan)
    failures: list[tuple[str, str]] = []
    fits = _fit_methods(a, b, k, w, n, elo_shuffles, float(elo_k), gen, ability_prior_sd)
    probs: list[FloatArray | None] = []
    for i, (m, fit) in enumerate(zip(METHODS, fits, strict=True)):
        if fit.error is not None:
            failures.append((m, fit.error))
            probs.append(None)
        else:
            ratings[i] = fit.ratings
            probs.append(fit.probability(a, b, k))
    votes = np.zeros(n, dtype=np.int64)
    for i, p in enumerate(probs):
        if p is None:
            continue
        per_vote = vote_log_loss(w, p)
        loss[i], votes = _per_model_mean(a, b, per_vote, n)
        overall[i] = float(per_vote.mean())
    scaled = np.full_like(ratings, np.nan)
    for i in range(3):
        row = ratings[i]
        if np.all(np.isfinite(row)) and row.max() > row.min():
            scaled[i] = (row - row.min()) / (row.max() - row.min())
    return ModelLosses(
        methods=METHODS,
        loss=loss,
        overall=overall,
        ratings=ratings,
        scaled=scaled,
        votes=votes,
        failures=tuple(failures),
    )


# --------------------------------------------------------------------------- sec. 5.4


@dataclass(frozen=True)
class DescentResult:
    """am-ELO by gradient descent from random starts (the paper's sec. 5.4, Fig. 5)."""

    normalised: bool
    """Whether eq. 7 (sum of abilities fixed, sign by the majority) was applied each step."""
    loss: FloatArray
    """Mean negative log-likelihood at the end of each start, shape (n_starts,)."""
    trace: FloatArray
    """Mean loss every ``trace_every`` steps of each start, shape (n_starts, n_points)."""
    consistency: float
    """Mean over pairs of starts of the share of model pairs the two final ratings order
    the same way (the paper's consistency; 1 = the starts agree)."""
    reversed_starts: int
    """Starts whose ranking is closer to the reverse of the first start's."""
    ratings: FloatArray
    """Final ratings of each start, shape (n_starts, n_models) (logit scale)."""
    steps: int
    """Gradient steps per start."""
    learning_rate: float
    """Step size."""
    trace_every: int
    """Steps between points of ``trace``."""


def _pair_agreement(x: FloatArray, y: FloatArray) -> float:
    i, j = np.triu_indices(x.size, 1)
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    agree = np.where(sx == sy, 1.0, np.where((sx == 0) | (sy == 0), 0.5, 0.0))
    return float(agree.mean()) if agree.size else math.nan


def am_elo_descent(
    model_a: npt.ArrayLike,
    model_b: npt.ArrayLike,
    annotator: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    normalise: bool = True,
    starts: int = 5,
    steps: int = 2000,
    learning_rate: float = 0.1,
    trace_every: int = 50,
    rng: RNGLike = None,
) -> DescentResult:
    """am-ELO fitted by full-batch gradient descent, with or without normalisation.

    The paper's setting (sec. 5.2 and 5.4): ratings ``R`` and abilities ``theta``
    start at standard normal draws, and ``steps`` steps with learning rate
    ``learning_rate`` minimise the mean negative log-likelihood of eq. 4,
    ``P(a beats b | k) = sigmoid(theta_k (R_a - R_b))``. The steps are Adam's
    (beta 0.9 / 0.999): plain gradient descent at rate 0.1 on the mean loss moves
    the ratings of a model with 1% of the votes by about 0.001 per step and is far
    from converged after 2000 steps on real data. With ``normalise`` the result is
    normalised by eq. 7 (ratings centred, ``R`` multiplied by the mean of ``theta``
    and ``theta`` divided by it): the loss is invariant to this, so the losses of the
    two variants are the same, and the normalisation turns every start to the
    direction the majority of annotators agrees with. Without it the direction is
    left to the start, and the starts may end reversed (the paper's consistency of
    0.4 = two ordered and three reversed of five). Eq. 7 fixes ``sum(theta) = 1``;
    fixing the mean to 1 differs only by a constant factor of ``R``.

    Examples
    --------
    >>> a, b, k = [0, 1, 0, 2, 1, 2], [1, 2, 2, 0, 0, 1], [0, 0, 1, 1, 2, 2]
    >>> res = am_elo_descent(a, b, k, [1, 1, 1, 0, 0, 0], steps=200, rng=0)
    >>> res.consistency
    1.0

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.4 and Fig. 5.
    """
    a, b, k, w = _ints(model_a), _ints(model_b), _ints(annotator), _floats(outcome)
    if a.size == 0:
        raise RankingInputError("there are no votes")
    if starts < 2 or steps < 1 or not learning_rate > 0 or trace_every < 1:
        raise InvalidParameterError(
            "need starts >= 2, steps >= 1, learning_rate > 0 and trace_every >= 1"
        )
    n = int(max(a.max(), b.max()) + 1)
    m = int(k.max() + 1)
    t = float(a.size)
    gen = make_rng(rng)
    finals, losses, traces = [], [], []
    for _ in range(starts):
        r = gen.standard_normal(n)
        th = gen.standard_normal(m)
        trace = []
        m1 = np.zeros(n + m)
        m2 = np.zeros(n + m)
        for step in range(steps + 1):
            d = r[a] - r[b]
            eta = th[k] * d
            if step % trace_every == 0 or step == steps:
                trace.append(-float(np.sum(w * log_expit(eta) + (1 - w) * log_expit(-eta))) / t)
            if step == steps:
                break
            res = (w - expit(eta)) / t  # d(-loss)/d(eta)
            gr = np.bincount(a, th[k] * res, n) - np.bincount(b, th[k] * res, n)
            gt = np.bincount(k, d * res, m)
            g = np.concatenate([gr, gt])
            m1 = 0.9 * m1 + 0.1 * g
            m2 = 0.999 * m2 + 0.001 * g * g
            upd = (
                learning_rate
                * (m1 / (1 - 0.9 ** (step + 1)))
                / (np.sqrt(m2 / (1 - 0.999 ** (step + 1))) + 1e-8)
            )
            r, th = r + upd[:n], th + upd[n:]
        c = float(th.mean())
        finals.append((r - r.mean()) * c if normalise and c != 0.0 else r)
        losses.append(trace[-1])
        traces.append(trace)
    fin = np.array(finals)
    pairs = [_pair_agreement(fin[i], fin[j]) for i in range(starts) for j in range(i + 1, starts)]
    rev = sum(_pair_agreement(fin[0], fin[i]) < 0.5 for i in range(1, starts))
    return DescentResult(
        normalised=normalise,
        loss=np.array(losses),
        trace=np.array(traces),
        consistency=float(np.mean(pairs)),
        reversed_starts=int(rev),
        ratings=fin,
        steps=int(steps),
        learning_rate=float(learning_rate),
        trace_every=int(trace_every),
    )


# --------------------------------------------------------------------------- Fig. 6


@dataclass(frozen=True)
class PerturbedAbilities:
    """am-ELO abilities of normal and perturbed annotators (the paper's Fig. 6, bottom)."""

    strategy: tuple[str, ...]
    """Perturbation of each row."""
    ratio: FloatArray
    """Share of annotators perturbed in each row's data set."""
    annotator: IntArray
    """Annotator index within the data set."""
    perturbed: BoolArray
    """Whether the annotator was perturbed."""
    ability: FloatArray
    """am-ELO ability (eq. 7: abilities sum to 1); NaN for an annotator left unrated
    (every vote a tie, or the fit of the data set failed)."""
    failures: tuple[tuple[str, float, str], ...]
    """``(strategy, ratio, reason)`` of each data set whose fit failed."""


def perturbed_abilities(
    *,
    strategies: tuple[str, ...] = ("random", "equal", "flip", "mixed"),
    ratios: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4),
    n_models: int = 20,
    n_annotators: int = 42,
    records_per_annotator: int = 100,
    tie_rate: float = 0.3,
    discrimination_sd: float = 0.0,
    rng: RNGLike = None,
) -> PerturbedAbilities:
    """Abilities of every annotator in one simulated arena per strategy and ratio.

    Each data set is drawn by :func:`ranking.simulation.simulate_arena` and
    perturbed by :func:`ranking.simulation.perturb_votes` as in the perturbation
    study; the abilities are those of the paper's fit (am-ELO on all annotators,
    :func:`ranking.stable_arena` with ``delta = 0``, ``epsilon = 0``), whose
    abilities at or below 0 are the paper's flags.

    Examples
    --------
    >>> pa = perturbed_abilities(strategies=("flip",), ratios=(0.2,), n_models=6,
    ...                          n_annotators=10, records_per_annotator=60, rng=0)
    >>> bool(np.nanmax(pa.ability[pa.perturbed]) < np.nanmin(pa.ability[~pa.perturbed]))
    True

    References
    ----------
    Liu, Z. et al. (2025). am-ELO, ICML 2025, sec. 5.5 and Fig. 6.
    """
    gen = make_rng(rng)
    strat: list[str] = []
    ratio: list[float] = []
    idx: list[IntArray] = []
    pert: list[BoolArray] = []
    abil: list[FloatArray] = []
    failures: list[tuple[str, float, str]] = []
    for s in strategies:
        for q in ratios:
            sim = simulate_arena(
                n_models=n_models,
                n_annotators=n_annotators,
                records_per_annotator=records_per_annotator,
                tie_rate=tie_rate,
                discrimination_sd=discrimination_sd,
                rng=gen,
            )
            pv = _perturb_share(sim, q, s, gen)
            try:
                th = np.asarray(_paper_fit(sim, pv.outcome).abilities, dtype=np.float64)
            except (RankingInputError, ConvergenceError, ArithmeticError) as err:
                failures.append((s, float(q), str(err)))
                th = np.full(n_annotators, np.nan)
            strat += [s] * n_annotators
            ratio += [float(q)] * n_annotators
            idx.append(np.arange(n_annotators, dtype=np.int64))
            pert.append(pv.perturbed)
            abil.append(th)
    return PerturbedAbilities(
        strategy=tuple(strat),
        ratio=np.array(ratio, dtype=np.float64),
        annotator=np.concatenate(idx) if idx else np.zeros(0, np.int64),
        perturbed=np.concatenate(pert) if pert else np.zeros(0, bool),
        ability=np.concatenate(abil) if abil else np.zeros(0),
        failures=tuple(failures),
    )
