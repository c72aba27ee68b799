"""Planted data for the trainer's tests: rows whose best tree is known."""

from __future__ import annotations

import numpy as np


def planted_depth2(n, seed, noise=0.1):
    """Depth-2 oblique tree: root x0 + x1 <= 1, then x0 - x2 <= 0.2 | 0.5 x1 + x3 <= 0.8; leaves 0, 1, 2, 3."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    left = X[:, 0] + X[:, 1] <= 1
    leaf = np.where(left, np.where(X[:, 0] - X[:, 2] <= 0.2, 0, 1), np.where(0.5 * X[:, 1] + X[:, 3] <= 0.8, 2, 3))
    return X, leaf + rng.normal(scale=noise, size=n), leaf.astype(float)


def planted_oblique(n, depth, seed, p=6, noise=0.1):
    """A dense random oblique tree of ``depth`` (``planted_tree``): every split uses all ``p`` features, every leaf
    holds about n / 2^depth rows; y adds Gaussian noise of sd ``noise``. Returns X (uniform in [0, 1]^p), y and the
    noise-free target. The tree is drawn from ``seed`` alone, so train and test sets of one seed share it."""
    weights, thresholds, values = planted_tree(depth, seed, p)
    rng = np.random.default_rng([seed, depth, p, n])
    X = rng.random((n, p))
    clean = values[planted_paths(X, weights, thresholds)[:, -1] - 2 ** depth]
    return X, clean + rng.normal(scale=noise, size=n), clean


def planted_tree(depth, seed, p=6):
    """``planted_oblique``'s tree: split weights (2^depth - 1, p) drawn Gaussian, thresholds at the median of the
    margins of the rows reaching each split (of 20,000 uniform reference rows), leaf values Gaussian (sd 1). Split t
    (0-based, heap order) sends x right when weights[t] . x > thresholds[t]."""
    tree_rng = np.random.default_rng([seed, depth, p])
    weights = tree_rng.normal(size=(2 ** depth - 1, p))
    values = tree_rng.normal(size=2 ** depth)
    reference = tree_rng.random((20_000, p))
    thresholds = np.zeros(2 ** depth - 1)
    node = np.zeros(len(reference), dtype=int)
    for _ in range(depth):
        margin = np.einsum("ij,ij->i", reference, weights[node])
        for t in np.unique(node):
            thresholds[t] = np.median(margin[node == t])
        node = 2 * node + 1 + (margin > thresholds[node])
    return weights, thresholds, values


def planted_paths(X, weights, thresholds):
    """(n, depth + 1): the 1-based heap id of the node each row of X reaches at every level of the planted tree."""
    depth = int(np.log2(len(weights) + 1))
    node = np.ones(len(X), dtype=int)
    path = [node]
    for _ in range(depth):
        node = 2 * node + (np.einsum("ij,ij->i", X, weights[node - 1]) > thresholds[node - 1])
        path.append(node)
    return np.stack(path, axis=1)


def noise_ceiling(clean, noise):
    """The best expected test R2 of any model on ``clean`` + Gaussian noise of sd ``noise``: 1 - noise_var/var(y)."""
    return 1.0 - noise ** 2 / (np.var(clean) + noise ** 2)


def planted_classes(n, depth, seed, p=6, flip=0.1, n_classes=4):
    """Classification on ``planted_tree``'s splits: leaf l's class is l mod ``n_classes`` (siblings differ), and each
    row's label is flipped to one of the other classes, uniformly, with probability ``flip``. The Bayes classifier is
    the planted tree, with accuracy 1 - ``flip`` (``flip`` < (C-1)/C). Returns X, the labels and the clean classes."""
    weights, thresholds, _ = planted_tree(depth, seed, p)
    rng = np.random.default_rng([seed, depth, p, n, 1])
    X = rng.random((n, p))
    clean = (planted_paths(X, weights, thresholds)[:, -1] - 2 ** depth) % n_classes
    shift = np.where(rng.random(n) < flip, rng.integers(1, n_classes, n), 0)
    return X, (clean + shift) % n_classes, clean
