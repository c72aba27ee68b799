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


def make_class_tree(depth: int = 2, p: int = 3, n_classes: int = 3, seed: int = 0, names=None, n_rows: int = 200,
                    labels=None, empty_subtree: bool = False) -> tuple[ObliqueTree, np.ndarray, np.ndarray]:
    """A random complete classification tree whose node_counts/node_values/n_samples are consistent with rows X
    (returned with their labels y). Each leaf mostly holds one class; leaf_proba are the leaf's shares with add-one
    smoothing, and a leaf no row reaches takes its parent's shares (the nearest ancestor with rows)."""
    regression, X, _ = make_tree(depth=depth, p=p, seed=seed, n_rows=n_rows, empty_subtree=empty_subtree)
    rng = np.random.default_rng(seed + 1)
    classes = list(labels) if labels is not None else [f"class {k}" for k in range(n_classes)]
    classes = np.unique(np.asarray(classes)).tolist()
    n_classes, n_leaves = len(classes), regression.n_leaves
    path = regression.decision_path(X)
    leaf_class = rng.integers(n_classes, size=n_leaves)
    k = np.where(rng.random(n_rows) < 0.8, leaf_class[path[:, -1] - n_leaves], rng.integers(n_classes, size=n_rows))
    counts = np.zeros((2 * n_leaves - 1, n_classes))
    for node in range(1, 2 * n_leaves):
        at = path[:, int(node).bit_length() - 1] == node
        counts[node - 1] = np.bincount(k[at], minlength=n_classes)
    proba = np.empty((n_leaves, n_classes))
    for i in range(n_leaves):
        node = n_leaves + i
        while counts[node - 1].sum() == 0 and node > 1:
            node //= 2
        proba[i] = (counts[node - 1] + 1) / (counts[node - 1].sum() + n_classes)
    totals = counts.sum(axis=1)
    with np.errstate(invalid="ignore"):
        node_values = np.where(totals > 0, counts.max(axis=1) / totals, np.nan)
    tree = ObliqueTree(weights=regression.weights, thresholds=regression.thresholds,
                       leaf_intercepts=np.zeros(n_leaves), leaf_coefs=np.zeros((n_leaves, p)),
                       n_samples=totals, node_values=node_values, x_min=regression.x_min,
                       x_scale=regression.x_scale, feature_names=names or [], leaf_type="classes", classes=classes,
                       leaf_proba=proba, node_counts=counts)
    return tree, X, np.asarray(classes)[k]


def class_stump(classes=("bad", "good")) -> ObliqueTree:
    """``stump``'s split (left iff 2*temp - pressure <= 3) with class leaves: left 'bad' 0.8, right 'good' 0.75."""
    tree = stump()
    return ObliqueTree(weights=tree.weights, thresholds=tree.thresholds, leaf_intercepts=[0.0, 0.0],
                       leaf_coefs=np.zeros((2, 2)), n_samples=[9, 5, 4], node_values=[5 / 9, 0.8, 0.75],
                       x_min=tree.x_min, x_scale=tree.x_scale, feature_names=tree.feature_names,
                       leaf_type="classes", classes=list(classes), leaf_proba=[[0.8, 0.2], [0.25, 0.75]],
                       node_counts=[[5, 4], [4, 1], [1, 3]])
