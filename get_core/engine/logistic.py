"""Logistic leaves for classification trees (issue 52): a multinomial logistic model per leaf, fitted on the leaf's
hard-split rows in the scaled inputs (binary: one logit).

Trained with the splits (``SOFT_PHASE``, the default): the soft phase's leaves are logistic models too
(``soft.LOGISTIC``: C logits per leaf, linear in the scaled row, under the soft-routed log loss, as GET-Linear trains
its linear leaves), each start's best tree is the one of lowest hard-routed log loss with those leaves, and the
per-leaf fits below then refit every leaf on its hard-split rows. Measured against a class-share soft phase with the
same refit (``get-logistic-refit``) on the 12 shared tables, seed 0, 10 s per search, paired in one run at load 9
(results/classify-v7.md): mean test accuracy 87.71 against 86.99, mean test log loss 0.321 against 0.392 (ionosphere
90.91 against 85.23, sonar 84.62 against 80.77, pima_diabetes 77.08 against 79.69). Such a fit has no polish and no
node refit (both judge a split by class shares) and no fused CPU kernel (its soft pass is torch's: on phoneme, 5,404
rows, a 10-s search took 59 s of wall time against 32 s on the loaded machine; an epoch of 8 starts cost 18x the
fused class-share kernel's on segment at depth 6, 8x on phoneme at depth 7). ``GETClassifierCV(leaf="auto")``
trains its fits the same way (``SEARCH_SOFT_PHASE``) and scores each also with its leaves' class shares.

Each leaf's rows are standardized (its weighted mean and standard deviation) before the fit and the model folded
back onto the scaled inputs, so the L2 penalty weighs every feature alike whatever its range (min-max scaling packs a
feature with far values into a sliver; on the 12 shared tables' depth-0 models this moved breast_cancer's test
accuracy from 96.5 to 98.6 and sonar's from 76.9 to 80.8, ionosphere's from 86.4 to 85.2).

Regularization without test rows: each leaf picks its L2 strength from ``STRENGTHS``, or its class shares, by the
weighted log loss of ``FOLDS``-fold cross-validation on its own training rows, then fits the winner on all of them.
Class shares win where a model does not beat them out of fold, and a leaf keeps its shares outright when it has
fewer than ``MIN_ROWS`` rows or fewer than two classes of at least ``FOLDS`` rows, as GET-Linear's "gcv" falls back
to the mean. A leaf's model covers the classes it has ``FOLDS`` rows of (the others, ``ABSENT_LOGIT``, get the
mixed-in share only): before, a leaf lacking any class kept its shares, so a shallow tree of many classes had no
model at all (segment, 7 classes, depth 1: validation accuracy 0.29 with either leaf type, one logistic model 0.93).
Probabilities mix in the constant leaves' one pseudo-row, (1 - m) softmax + m / C with m = 1 / (n + 1)
(``classes.SMOOTHING``), so no row is given 0 or 1.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from get_core.budget import Budget
from get_core.engine import classes
from get_core.model import routing
from get_core.model.tree import ObliqueTree

#: Whether the soft phase trains logistic leaves with the splits (``soft.LOGISTIC``: each leaf's C logits linear in
#: the row, the soft-routed log loss, the best tree by its hard log loss) rather than class shares under the Brier
#: loss; the per-leaf fits below follow either way. See the module docstring for the measurement.
SOFT_PHASE = True
#: The same for ``GETClassifierCV(leaf="auto")``'s search fits and refit. Off, its class-share candidates would be
#: trees trained for class shares rather than the class shares of splits trained for logistic leaves; measured on
#: the 12 shared tables, seeds 0-2, 20 s per search, paired (results/classify-v7.md), on against off: accuracy 87.27
#: against 87.22, log loss 0.357 against 0.404, under the better of CART and logistic regression minus 1 point on 2
#: tables (by 0.2 and 0.5) against 3 (by up to 5.0). Seed 0 alone said the opposite (86.41 against 87.23).
SEARCH_SOFT_PHASE = True
#: A leaf with fewer training rows keeps its class shares.
MIN_ROWS = 30
#: The L2 strengths a leaf chooses from (scikit-learn's C, with the leaf's row weights scaled to mean 1).
STRENGTHS = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
#: Folds of each leaf's choice.
FOLDS = 3
#: The logit of a class that a leaf's model leaves out (fewer than ``FOLDS`` of its rows): softmax gives it 0, so it
#: gets the mixed-in m / C alone, as a class-share leaf without that class's rows would.
ABSENT_LOGIT = -1000.0
#: Newton iterations per fit (inputs in [0, 1]: a handful usually suffice). Newton-Cholesky, not L-BFGS: on these
#: small problems L-BFGS's many cheap steps each paid the BLAS threads' start (10x slower on a loaded 2-core machine).
MAX_ITER = 100


def fit_logistic_leaves(tree: ObliqueTree, Xs: np.ndarray, codes: np.ndarray, sample_weight: np.ndarray | None,
                        random_state: int | None, budget: Budget | None = None, limit: int | None = None,
                        trained: tuple[np.ndarray, np.ndarray] | None = None) -> ObliqueTree:
    """Give the classification ``tree`` (its class leaves already refit on these rows) a logistic model per leaf;
    ``Xs`` are its scaled training rows, ``codes`` their class indices. Returns the tree, its ``logit_*`` fields set,
    ``meta["leaf_strengths"]`` each leaf's chosen C (None: class shares) and ``meta["logistic_leaves_tried"]`` how
    many leaves were taken up. Leaves are taken up most rows first; none after ``budget`` is spent (the first
    always is) nor past the first ``limit`` (a replayed fit's count): the rest keep their class shares, or the soft
    phase's models when it ``trained`` them (intercepts (L, C), coefs (L, C, p) on the scaled inputs)."""
    L, C, p = tree.n_leaves, tree.n_classes, tree.n_features
    sw = np.ones(len(codes)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    leaf = routing.leaves(tree, Xs, scaled=True) - L
    intercepts = np.log(tree.leaf_proba)  # a leaf without a model: softmax(log shares) = its shares
    coefs = np.zeros((L, C, p))
    mix = np.zeros(L)
    if trained is not None:
        intercepts, coefs = (np.array(t, dtype=np.float64) for t in trained)
        mix = classes.SMOOTHING / (tree.node_counts[L - 1:].sum(axis=1) + classes.SMOOTHING)
    strengths: list[float | None] = [None] * L
    order = np.argsort(-np.bincount(leaf[sw > 0], minlength=L), kind="stable")
    tried = 0
    with threadpool_limits(1):  # a leaf's problems are small: BLAS threads cost more than they give (loaded CPUs)
        for i in order:
            if (limit is not None and tried >= limit) or (budget is not None and tried and budget.left() <= 0):
                break
            tried += 1
            rows = np.flatnonzero((leaf == i) & (sw > 0))
            intercepts[i], coefs[i], mix[i] = np.log(tree.leaf_proba[i]), 0.0, 0.0  # shares unless a model wins
            present = np.flatnonzero(np.bincount(codes[rows], minlength=C) >= FOLDS)
            rows = rows[np.isin(codes[rows], present)]
            if len(rows) < MIN_ROWS or len(present) < 2:
                continue
            y, w = np.searchsorted(present, codes[rows]), sw[rows] / sw[rows].mean()
            strength = choose_strength(Xs[rows], y, w, len(present), random_state)
            if strength is None:
                continue
            intercepts[i], coefs[i] = ABSENT_LOGIT, 0.0
            intercepts[i, present], coefs[i, present] = _fit(Xs[rows], y, w, len(present), strength)
            mix[i] = classes.SMOOTHING / (tree.node_counts[L - 1 + i].sum() + classes.SMOOTHING)
            strengths[i] = strength
    tree.logit_intercepts, tree.logit_coefs, tree.logit_mix = intercepts, coefs, mix
    tree.meta.update(leaf_strengths=strengths, logistic_leaves_tried=tried)
    return tree


def choose_strength(X: np.ndarray, y: np.ndarray, w: np.ndarray, n_classes: int,
                    random_state: int | None) -> float | None:
    """The C of ``STRENGTHS`` whose model has the lowest weighted out-of-fold log loss on these rows, or None where
    the rows' smoothed class shares do better (every class has at least ``FOLDS`` rows)."""
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=None if random_state is None else random_state % 2 ** 32)
    losses = np.zeros(len(STRENGTHS) + 1)  # the last: class shares
    for fit_rows, held in folds.split(X, y):
        n = w[fit_rows].sum()
        mix = classes.SMOOTHING / (n + classes.SMOOTHING)
        counts = np.bincount(y[fit_rows], weights=w[fit_rows], minlength=n_classes)
        losses[-1] += _log_loss(np.tile(classes.smoothed(counts), (len(held), 1)), y[held], w[held])
        for s, strength in enumerate(STRENGTHS):
            b, a = _fit(X[fit_rows], y[fit_rows], w[fit_rows], n_classes, strength)
            z = b + X[held] @ a.T
            e = np.exp(z - z.max(axis=1, keepdims=True))
            proba = (1 - mix) * e / e.sum(axis=1, keepdims=True) + mix / n_classes
            losses[s] += _log_loss(proba, y[held], w[held])
    best = int(np.argmin(losses))  # ties: the strongest regularization, then shares
    return None if best == len(STRENGTHS) else STRENGTHS[best]


def _log_loss(proba: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(-(w * np.log(proba[np.arange(len(y)), y])).sum())


def _fit(X: np.ndarray, y: np.ndarray, w: np.ndarray, n_classes: int, strength: float) -> tuple[np.ndarray, np.ndarray]:
    """(intercepts (C,), coefs (C, p)) of an L2 multinomial logistic regression; a binary problem's one logit is
    class 1's, class 0's held at 0 (the same softmax)."""
    mean = np.average(X, axis=0, weights=w)
    sd = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=w))
    sd = np.where(sd > 1e-12, sd, 1.0)
    model = LogisticRegression(C=strength, solver="newton-cholesky", max_iter=MAX_ITER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit((X - mean) / sd, y, sample_weight=w)
    coefs = model.coef_ / sd  # back to the scaled inputs: w·(x - mean)/sd + b = (w/sd)·x + b - (w/sd)·mean
    intercepts = model.intercept_ - coefs @ mean
    if n_classes == 2:
        return np.array([0.0, intercepts[0]]), np.vstack([np.zeros(X.shape[1]), coefs[0]])
    return intercepts, coefs

