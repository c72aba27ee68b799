"""A reference for counterfactual tests, written apart from get_core.model.counterfactual: every leaf is solved, in
original units, with its own linear program over x' and |x' - x| (no pruning, no scaled units, no knapsack); a cap
is met by trying every set of features allowed to move."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.optimize import linprog

from get_core.model.tree import ObliqueTree


def leaf_polytope(tree: ObliqueTree, leaf: int, margin: float, inside: float = 0.0,
                  radius: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(A, b) with A x <= b for the rows that reach ``leaf``, in original units; right branches kept ``margin`` off,
    left ones ``inside``; with ``radius`` (per feature, original units) every side also keeps the box of that
    radius around x inside (sum_j |a_j| radius_j more)."""
    A, b = [], []
    node = leaf
    while node > 1:
        parent, right = node // 2, node % 2 == 1
        a, c = tree.split_in_original_units(parent)
        box = 0.0 if radius is None else float(np.abs(a) @ radius)
        A.append(-a if right else a)
        b.append((-c - margin if right else c - inside) - box)
        node = parent
    return np.array(A), np.array(b)


def nearest_in_leaf(tree: ObliqueTree, x: np.ndarray, leaf: int, costs: np.ndarray, low: np.ndarray,
                    high: np.ndarray, movable: np.ndarray, goal=None, norm: str = "l1",
                    margin: float = 1e-9, inside: float = 0.0, radius: np.ndarray | None = None) -> float:
    """The least L1 (or L-infinity) weighted distance from x to a row of ``leaf`` within [low, high], moving only
    ``movable`` features; with ``goal`` (low, high) for a linear leaf, its clamped line must land there (``inside``
    off its ends, as off left branches: 0 solves the closure of the leaf). inf if none."""
    p = len(x)
    A, b = leaf_polytope(tree, leaf, margin, inside, radius)
    # variables: x' (p), e (p) with e >= |x' - x| (L1) or one t >= c_j |x'_j - x_j| (L-infinity)
    k = p if norm == "l1" else 1
    rows, rhs = [np.hstack([A, np.zeros((len(A), k))])], [b]
    for j in range(p):
        for sign in (1.0, -1.0):
            row = np.zeros(p + k)
            row[j] = sign * (costs[j] if norm == "linf" else 1.0)
            row[p + (j if norm == "l1" else 0)] = -1.0
            rows.append(row[None])
            rhs.append([sign * x[j] * (costs[j] if norm == "linf" else 1.0)])
    if goal is not None:
        i = leaf - tree.n_leaves
        h, w = tree.leaf_in_original_units(leaf)
        lo, hi = (tree.y_min + tree.y_scale * tree.leaf_lower[i], tree.y_min + tree.y_scale * tree.leaf_upper[i])
        g_low, g_high = goal
        box = 0.0 if radius is None else float(np.abs(w) @ radius)
        if g_low is not None and g_low > lo:
            rows.append(np.concatenate([-w, np.zeros(k)])[None])
            rhs.append([h - g_low - inside - box])
        if g_high is not None and g_high < hi:
            rows.append(np.concatenate([w, np.zeros(k)])[None])
            rhs.append([g_high - h - inside - box])
    objective = np.concatenate([np.zeros(p), costs if norm == "l1" else [1.0]])
    bounds = [(lo_j, hi_j) if m else (x_j, x_j) for lo_j, hi_j, m, x_j in zip(low, high, movable, x)] + [(0, None)] * k
    result = linprog(objective, A_ub=np.vstack(rows), b_ub=np.concatenate(rhs), bounds=bounds, method="highs")
    return float(result.fun) if result.status == 0 else np.inf


def brute_force(tree: ObliqueTree, x: np.ndarray, leaves, costs: np.ndarray, low: np.ndarray, high: np.ndarray,
                locked=(), max_changes=None, goal=None, norm: str = "l1", margin: float = 1e-9,
                inside: float = 0.0, radius: np.ndarray | None = None) -> float:
    """The least distance over ``leaves`` (heap ids whose output can meet the goal) and, with a cap, over every set
    of at most ``max_changes`` unlocked features; right branches kept ``margin`` off, left ones and the goal's ends
    ``inside`` (both 0: the infimum), and with ``radius`` a box around the answer inside too."""
    free = [j for j in range(len(x)) if j not in set(locked)]
    subsets = [free] if max_changes is None else [
        list(s) for r in range(0, min(max_changes, len(free)) + 1) for s in combinations(free, r)]
    best = np.inf
    for subset in subsets:
        movable = np.isin(np.arange(len(x)), subset)
        for leaf in leaves:
            best = min(best, nearest_in_leaf(tree, x, leaf, costs, low, high, movable, goal, norm, margin, inside,
                                             radius))
    return best
