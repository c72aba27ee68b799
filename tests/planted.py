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
