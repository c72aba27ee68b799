"""Classification in the engine: one-hot targets, the per-leaf soft loss and its gradient, class-frequency leaves.

A classification problem is the regression engine's with a class axis: the targets are one-hot rows Y (n, C) and
each leaf holds C numbers F_l, so every part of the soft tree that mixes leaves (the bottom-up recursion
R_t = s_t R_2t + (1 - s_t) R_2t+1 and the top-down reach Q) is unchanged; only the leaf's own loss R_l(y) and its
gradient differ (``soft.soft_loss_and_grad`` calls the two functions here). Both candidate losses are linear in y,
so one matmul F Y^T gives every (model, leaf, row) value without a (models x leaves x rows x classes) array:

* ``"brier"`` (the default): R_l(y) = |y - F_l|^2 = |y|^2 - 2 F_l.y + |F_l|^2. Its hard-leaf optimum is the leaf's
  class frequencies, and the tree's loss at those leaves is the weighted Gini impurity CART minimizes, so the soft
  loss, the leaves recomputed from hard splits and the hard criterion that picks the best tree are one objective.
* ``"log"`` (cross-entropy with leaf class scores, Frosst and Hinton's soft trees, RADDT): R_l(y) = logsumexp(F_l)
  - F_l.y, dR/dF_l = softmax(F_l) - y. Its hard-leaf optimum is the class frequencies too (as log-shares).

Why Brier by default: measured in docs/BENCHMARKS.md ("Classification"), it trains as well or better at the same
epochs and needs no log of a zero share. Leaves are never taken from the gradient: after every stage they are the
hard split's weighted class frequencies (``leaves.fit_leaves``); for the log loss they enter the soft pass as the
logs of smoothed frequencies (``leaf_scores``).
"""

from __future__ import annotations

import numpy as np
import torch

Tensor = torch.Tensor

SOFT_LOSSES = ("brier", "log")
#: The per-leaf loss the soft pass trains with (see the module docstring and docs/BENCHMARKS.md).
SOFT_LOSS = "brier"
#: Additive smoothing of the fitted model's leaf probabilities: (count_c + SMOOTHING / C) / (count + SMOOTHING),
#: counts in (weighted) rows. One pseudo-row spread evenly over the classes never changes which class a leaf
#: predicts (the order of its counts is kept), and a leaf of a few rows no longer claims a share of 0 or 1 (one test
#: row there would cost an infinite log loss). Measured in docs/BENCHMARKS.md.
SMOOTHING = 1.0


def one_hot(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """(n, C) float64 rows of 0 and 1 from class indices 0..C-1."""
    out = np.zeros((len(codes), n_classes))
    out[np.arange(len(codes)), np.asarray(codes, dtype=np.int64)] = 1.0
    return out


def leaf_terms(F: Tensor, loss: str) -> tuple[Tensor, Tensor]:
    """(G (M, L, C), A (M, L, 1)) with R_l(y) = A_l + G_l.y for one-hot y: Brier G = -2F, A = 1 + |F|^2; log loss
    G = -F, A = logsumexp(F)."""
    if loss == "brier":
        return F.mul(-2.0), F.square().sum(dim=2, keepdim=True).add_(1.0)
    return F.neg(), torch.logsumexp(F, dim=2, keepdim=True)


def leaf_losses(F: Tensor, Y: Tensor, starts: int, loss: str, out: Tensor) -> Tensor:
    """R_l(y_i) for every model, leaf and row, written into ``out`` (M, L, n). F (M, L, C) leaf values, Y (B, n, C)
    one-hot."""
    B, n, C = Y.shape
    M, L, _ = F.shape
    G, A = leaf_terms(F, loss)
    torch.bmm(G.view(B, starts * L, C), Y.transpose(1, 2), out=out.view(B, starts * L, n))  # G_l . y_i
    out.add_(A)
    return out


def leaf_gradient(F: Tensor, Q: Tensor, Y: Tensor, starts: int, loss: str) -> Tensor:
    """dL/dF (M, L, C) from the leaves' reach Q (M, L, n), weights included: sum_i Q_li dR_l(y_i)/dF_l."""
    B, n, C = Y.shape
    M, L, _ = F.shape
    QY = torch.bmm(Q.view(B, starts * L, n), Y).view(M, L, C)
    return gradient_from_sums(F, QY, Q.sum(dim=2, keepdim=True), loss)


def gradient_from_sums(F: Tensor, QY: Tensor, reach: Tensor, loss: str) -> Tensor:
    """dL/dF from each leaf's reach summed by class, QY (M, L, C), and in all, reach (M, L, 1): Brier
    2 (F reach - QY), log loss softmax(F) reach - QY."""
    if loss == "brier":
        return F.mul(reach).sub_(QY).mul_(2.0)
    return torch.softmax(F, dim=2).mul_(reach).sub_(QY)


def leaf_scores(shares: Tensor, loss: str) -> Tensor:
    """The leaf values the soft pass starts a stage from, given the hard split's class shares (M, L, C): the shares
    themselves (Brier), or their logs after a little smoothing (log loss: a zero share would be -inf)."""
    if loss == "brier":
        return shares
    return (shares + 1e-3).log()


def smoothed(counts: np.ndarray, strength: float = SMOOTHING) -> np.ndarray:
    """Probabilities (..., C) from weighted class counts (..., C): (counts + strength / C) / (n + strength)."""
    total = counts.sum(axis=-1, keepdims=True)
    return (counts + strength / counts.shape[-1]) / (total + strength)


def brier_rows(proba: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Per-row Brier score |p - y|^2 (n,) of probability rows against one-hot rows."""
    return np.square(proba - Y).sum(axis=1)
