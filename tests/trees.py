"""Hand-made ObliqueTrees for view and export tests (no trainer involved)."""

from __future__ import annotations

import numpy as np

from get_core.model.tree import ObliqueTree


def make_tree(depth: int = 2, p: int = 3, leaf: str = "constant", seed: int = 0, names=None, n_rows: int = 200,
              empty_subtree: bool = False, one_feature_root: int | None = None,
              tiny_term: bool = False) -> tuple[ObliqueTree, np.ndarray, np.ndarray]:
    """A random complete tree whose n_samples/node_values are consistent with rows X (returned with y). With
    ``one_feature_root`` the root splits on that feature alone (a weight of 0.2, as a sparse fit leaves it); with
    ``tiny_term`` node 2's last weight is 1e-28 (as a dense fit can leave a one-hot column's)."""
    rng = np.random.default_rng(seed)
    n_branch, n_leaves = 2 ** depth - 1, 2 ** depth
    X = rng.normal(loc=10.0, scale=3.0, size=(n_rows, p))
    x_min, x_scale = X.min(axis=0), X.max(axis=0) - X.min(axis=0)
    weights = rng.normal(size=(n_branch, p))
    if one_feature_root is not None:
        weights[0] = 0.0
        weights[0, one_feature_root] = 0.2
    if tiny_term and depth > 1:
        weights[1, -1] = 1e-28
    xs = (X - x_min) / x_scale
    thresholds = np.median(xs @ weights.T, axis=0)  # roughly balanced splits
    if empty_subtree:
        thresholds[0] = np.max(xs @ weights[0]) + 1.0  # every row goes left at the root
    coefs = rng.normal(size=(n_leaves, p)) if leaf == "linear" else np.zeros((n_leaves, p))
    tree = ObliqueTree(weights=weights, thresholds=thresholds, leaf_intercepts=rng.normal(size=n_leaves),
                       leaf_coefs=coefs, n_samples=np.zeros(2 * n_leaves - 1), node_values=np.zeros(2 * n_leaves - 1),
                       x_min=x_min, x_scale=x_scale, y_min=-5.0, y_scale=20.0, feature_names=names or [],
                       leaf_type=leaf)
    if leaf == "linear":  # bounds that bind on part of the rows; the last leaf unbounded
        raw, at = tree.predict_scaled(X), tree.apply(X) - n_leaves
        quantiles = [np.quantile(raw[at == i], [0.2, 0.8]) if np.any(at == i) else (-1.0, 1.0)
                     for i in range(n_leaves)]
        tree.leaf_lower, tree.leaf_upper = np.array(quantiles).T.copy()
        tree.leaf_lower[-1], tree.leaf_upper[-1] = -np.inf, np.inf
    y = tree.predict(X) + rng.normal(scale=0.5, size=n_rows)
    path = tree.decision_path(X)
    ys = (y - tree.y_min) / tree.y_scale
    for node in range(1, tree.n_nodes + 1):
        mask = path[:, int(node).bit_length() - 1] == node
        tree.n_samples[node - 1] = mask.sum()
        tree.node_values[node - 1] = ys[mask].mean() if mask.any() else np.nan
    return tree, X, y


def stump(names=("temp", "pressure")) -> ObliqueTree:
    """Depth 1: left iff 2*temp - 1*pressure <= 3 (identity scaling), leaves 10 and 20."""
    p = len(names)
    w = np.zeros((1, p))
    w[0, 0], w[0, 1] = 2.0, -1.0
    return ObliqueTree(weights=w, thresholds=[3.0], leaf_intercepts=[10.0, 20.0], leaf_coefs=np.zeros((2, p)),
                       n_samples=[5, 3, 2], node_values=[14.0, 10.0, 20.0], x_min=np.zeros(p), x_scale=np.ones(p),
                       feature_names=list(names))
