"""Initial trees for the multi-start search: scikit-learn's CART (start 0) and random hyperplanes (the others).

On a table with holes (``get_core.model.inputs``: a number with holes is its training mean there plus a 0/1 "is
missing" engine column in its group) the CART start learns a default direction per split as gradient boosting does:
it grows on the raw values with NaN where the indicator says missing (scikit-learn's trees send missing rows to the
side that fits best), and each split on such a number is written ``x + w * is_missing <= t`` with ``w`` putting the
missing rows (whose ``x`` is the fill) on CART's side by ``MISSING_MARGIN``. Without it CART would only see the fill,
which sends missing rows wherever the mean falls.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

#: Learn a default direction for missing values at the CART start (see the module docstring); off: CART on the fills.
DEFAULT_DIRECTION = True
#: Random starts put no weight on the "is missing" columns (missing rows start at the fill, as mean imputation);
#: off: it did not help (results/missing-values-v2.md, -0.10 +- 0.43 points against the default direction alone).
ZERO_RANDOM_MISSING = False
#: How far past the threshold a missing row's split value is put, in scaled units (a column spans [0, 1]).
MISSING_MARGIN = 0.25


def cart_splits(X: np.ndarray, y: np.ndarray, depth: int, random_state: int | None,
                sample_weight: np.ndarray | None = None,
                groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned splits of a CART of ``depth`` in heap order: weights (2^D-1, p), thresholds (2^D-1,). One-hot
    ``y`` (n, C) grows a classification CART (Gini) on the class indices.

    sklearn also sends ``x_f <= threshold`` left, so the hard routing of the returned splits is CART's. Where CART
    stopped early (pure or tiny node), the missing branch nodes send every row left (a = 0, b = 1), which keeps
    CART's leaves intact. ``groups`` (p,), engine column -> raw column, finds the numbers with an "is missing"
    column (``missing_pairs``); with ``DEFAULT_DIRECTION`` their splits learn where missing rows go.
    """
    n_branch, p = 2 ** depth - 1, X.shape[1]
    pairs = missing_pairs(X, groups) if DEFAULT_DIRECTION and groups is not None else {}
    fill = {f: X[X[:, m] == 1.0, f][0] for f, m in pairs.items()}
    if pairs:
        X = X.copy()
        for f, m in pairs.items():
            X[X[:, m] == 1.0, f] = np.nan
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
        f, t = cart.feature[node], cart.threshold[node]
        left = bool(cart.missing_go_to_left[node])
        if f in pairs and not np.isfinite(t):  # missing rows apart from all others: a split on "is missing" alone
            weights[heap - 1, pairs[f]], thresholds[heap - 1] = (-1.0, -0.5) if left else (1.0, 0.5)
        else:
            weights[heap - 1, f], thresholds[heap - 1] = 1.0, t
            if f in pairs:  # missing rows sit at the fill: move them to CART's side of t
                weights[heap - 1, pairs[f]] = t - fill[f] + (-MISSING_MARGIN if left else MISSING_MARGIN)
        stack += [(cart.children_left[node], 2 * heap), (cart.children_right[node], 2 * heap + 1)]
    return weights, thresholds


def missing_pairs(X: np.ndarray, groups: np.ndarray) -> dict[int, int]:
    """Number column -> its "is missing" column: each group of two engine columns whose second is 0/1 with some 1s
    and whose first is one value (the fill) wherever the second is 1 (``get_core.model.inputs``' layout)."""
    pairs = {}
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        if members.size != 2:
            continue
        f, m = members
        flag = X[:, m]
        if np.all((flag == 0.0) | (flag == 1.0)) and flag.any() and np.ptp(X[flag == 1.0, f]) == 0.0:
            pairs[int(f)] = int(m)
    return pairs


def random_splits(X: torch.Tensor, n_rows: torch.Tensor, starts: int, depth: int,
                  gen: torch.Generator, groups: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Random unit-norm hyperplanes, each through a random training row of its problem so splits start balanced.

    X (B, n, p) on the CPU, ``n_rows`` (B,) real rows per problem. Returns weights (B*S, N, p), thresholds (B*S, N).
    With ``ZERO_RANDOM_MISSING`` and ``groups`` (as ``cart_splits``) the "is missing" columns get no weight.
    """
    B, _, p = X.shape
    N = 2 ** depth - 1
    weights = torch.randn(B * starts, N, p, generator=gen, dtype=X.dtype)
    if ZERO_RANDOM_MISSING and groups is not None:
        weights[:, :, list(missing_pairs(X[0, :int(n_rows[0])].numpy(), groups).values())] = 0.0
    weights /= weights.norm(dim=2, keepdim=True).clamp_min(1e-12)
    pick = (torch.rand(B * starts, N, generator=gen, dtype=torch.float64)
            * n_rows.repeat_interleave(starts).view(-1, 1)).long()
    problem = torch.arange(B).repeat_interleave(starts).view(-1, 1)
    rows = X[problem, pick]  # (M, N, p), without a copy of X per start (400 MB at 1,000,000 x 10 and 10 starts)
    return weights, (weights * rows).sum(dim=2)
