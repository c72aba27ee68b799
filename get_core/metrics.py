"""Regression scores in one place: R² and RMSE as runs, baselines, views and the depth search report them.

The rule for an R² that is undefined (fewer than two rows, or a constant target: there is no variance to explain)
is decided here once. ``scores`` gives None for it, which the pages show as a dash. The depth search has to rank
every tree, so ``search_r2`` scores such a tree as scikit-learn's ``r2_score`` does (1.0 for a perfect prediction,
else 0.0); on rows with a defined R² both are the same number, and the same one ``GETRegressor.score`` (scikit-learn's
``r2_score``) gives. Plain numpy: the store, pages and exports use it without the trainer.
"""

from __future__ import annotations

import math

import numpy as np


def scores(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float | None, float | None]:
    """(R², RMSE) of ``y_pred`` against ``y_true``, in the target's units; R² is None where it is undefined (fewer
    than two rows, a constant target), RMSE None with no rows."""
    y_true = np.asarray(y_true, dtype=np.float64).ravel()
    y_pred = np.asarray(y_pred, dtype=np.float64).ravel()
    if y_true.size == 0:
        return None, None
    sse = float(np.sum((y_true - y_pred) ** 2))
    sst = float(np.sum((y_true - y_true.mean()) ** 2))
    return (1.0 - sse / sst if y_true.size >= 2 and sst > 0 else None), math.sqrt(sse / y_true.size)


def r2(y_true: np.ndarray, y_pred: np.ndarray) -> float | None:
    """``scores``' R²."""
    return scores(y_true, y_pred)[0]


def search_r2(y_true: np.ndarray, y_pred: np.ndarray, weights: np.ndarray | None = None) -> float:
    """R² for ranking trees: ``scores``' R² (with ``weights``, the rows' weighted R²), and where that is undefined
    scikit-learn's finite stand-in (1.0 when no squared error is left, else 0.0)."""
    r2 = scores(y_true, y_pred)[0] if weights is None else _weighted_r2(y_true, y_pred, weights)
    if r2 is not None:
        return r2
    exact = float(np.sum((np.ravel(y_true) - np.ravel(y_pred)) ** 2)) == 0  # as r2_score: no squared error left
    return 1.0 if exact else 0.0


def _weighted_r2(y_true: np.ndarray, y_pred: np.ndarray, weights: np.ndarray) -> float | None:
    """R² with each row counted ``weights`` times (None where the weighted target has no variance)."""
    y_true, y_pred = np.asarray(y_true, dtype=np.float64).ravel(), np.asarray(y_pred, dtype=np.float64).ravel()
    sst = float(np.sum(weights * (y_true - np.average(y_true, weights=weights)) ** 2))
    return 1.0 - float(np.sum(weights * (y_true - y_pred) ** 2)) / sst if sst > 0 else None


def target_span(y: np.ndarray) -> float:
    """The target's range, the unit of the trainer's scaled target (``engine.train.MinMax``; 1 for a constant
    target): the loss curves turn the scaled MSE back into RMSE in the target's units with it."""
    span = float(np.max(y)) - float(np.min(y))
    return span if span > 0 else 1.0
