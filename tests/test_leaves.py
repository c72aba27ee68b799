"""Leaves from hard splits: means, ridge least squares, and empty leaves taking their nearest ancestor's value."""

import numpy as np
import pytest

from get_core.leaves import refit_tree_leaves
from tests.trees import make_tree


def test_constant_leaves_are_the_mean_of_their_rows():
    tree, X, y = make_tree(depth=3, seed=1)
    ys = (y - tree.y_min) / tree.y_scale
    refit_tree_leaves(tree, X, ys)
    leaf = tree.apply(X)
    for node in np.unique(leaf):
        assert tree.leaf_intercepts[node - tree.n_leaves] == pytest.approx(ys[leaf == node].mean())
        assert tree.n_samples[node - 1] == np.count_nonzero(leaf == node)


def test_empty_leaves_take_their_nearest_non_empty_ancestor_mean():
    tree, X, y = make_tree(depth=2, seed=2, empty_subtree=True)  # every row goes left at the root
    ys = (y - tree.y_min) / tree.y_scale
    refit_tree_leaves(tree, X, ys)
    assert tree.n_samples[2] == 0 and tree.n_samples[5] == 0 and tree.n_samples[6] == 0  # nodes 3, 6, 7
    np.testing.assert_allclose(tree.leaf_intercepts[2:], ys.mean())
    assert np.isnan(tree.node_values[2]) and tree.node_values[0] == pytest.approx(ys.mean())


def test_linear_leaves_fit_least_squares_and_fall_back_to_the_mean_when_rows_are_few():
    tree, X, y = make_tree(depth=1, p=3, leaf="linear", seed=3, n_rows=400)
    ys = (y - tree.y_min) / tree.y_scale
    refit_tree_leaves(tree, X, ys)
    xs = tree.scale_X(X)
    leaf = tree.apply(X) - tree.n_leaves
    for i in range(2):
        rows = leaf == i
        A = np.c_[xs[rows], np.ones(rows.sum())]
        want = np.linalg.lstsq(A, ys[rows], rcond=None)[0]
        np.testing.assert_allclose(np.r_[tree.leaf_coefs[i], tree.leaf_intercepts[i]], want, atol=2e-3)
    few = slice(0, 4)  # 4 rows < p + 2 = 5 in at least one leaf
    refit_tree_leaves(tree, X[few], ys[few])
    small = tree.n_samples[1:] < 5
    assert np.all(tree.leaf_coefs[small] == 0)
