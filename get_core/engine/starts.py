"""Initial trees for the multi-start search: scikit-learn's CART (start 0) and random hyperplanes (the others)."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor


def cart_splits(X: np.ndarray, y: np.ndarray, depth: int, random_state: int | None,
                sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned splits of a CART of ``depth`` in heap order: weights (2^D-1, p), thresholds (2^D-1,). One-hot
    ``y`` (n, C) grows a classification CART (Gini) on the class indices.

    sklearn also sends ``x_f <= threshold`` left, so the hard routing of the returned splits is CART's. Where CART
    stopped early (pure or tiny node), the missing branch nodes send every row left (a = 0, b = 1), which keeps
    CART's leaves intact.
    """
    n_branch, p = 2 ** depth - 1, X.shape[1]
    weights = np.zeros((n_branch, p))
    thresholds = np.ones(n_branch)
    if X.shape[0] < 2:
        return weights, thresholds
    if np.ndim(y) == 2:
        cart = DecisionTreeClassifier(max_depth=depth, random_state=random_state).fit(
            X, np.argmax(y, axis=1), sample_weight=sample_weight).tree_
    else:
        cart = DecisionTreeRegressor(max_depth=depth, random_state=random_state).fit(
            X, y, sample_weight=sample_weight).tree_
    stack = [(0, 1)]  # (sklearn node id, heap node id)
    while stack:
        node, heap = stack.pop()
        if cart.children_left[node] < 0 or heap > n_branch:
            continue
        weights[heap - 1, cart.feature[node]] = 1.0
        thresholds[heap - 1] = cart.threshold[node]
        stack += [(cart.children_left[node], 2 * heap), (cart.children_right[node], 2 * heap + 1)]
    return weights, thresholds


def random_splits(X: torch.Tensor, n_rows: torch.Tensor, starts: int, depth: int,
                  gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random unit-norm hyperplanes, each through a random training row of its problem so splits start balanced.

    X (B, n, p) on the CPU, ``n_rows`` (B,) real rows per problem. Returns weights (B*S, N, p), thresholds (B*S, N).
    """
    B, _, p = X.shape
    N = 2 ** depth - 1
    weights = torch.randn(B * starts, N, p, generator=gen, dtype=X.dtype)
    weights /= weights.norm(dim=2, keepdim=True).clamp_min(1e-12)
    pick = (torch.rand(B * starts, N, generator=gen, dtype=torch.float64)
            * n_rows.repeat_interleave(starts).view(-1, 1)).long()
    problem = torch.arange(B).repeat_interleave(starts).view(-1, 1)
    rows = X[problem, pick]  # (M, N, p), without a copy of X per start (400 MB at 1,000,000 x 10 and 10 starts)
    return weights, (weights * rows).sum(dim=2)
