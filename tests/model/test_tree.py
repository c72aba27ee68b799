"""ObliqueTree: hard inference and splits and leaves in original units."""

import numpy as np
import pytest

from get_core import export
from get_core.model.tree import ObliqueTree
from tests.trees import make_tree, stump


def loop_predict(tree: ObliqueTree, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plainest reading of the stored arrays: one row at a time, one node at a time."""
    preds, leaves = [], []
    for x in X:
        xs = [(x[j] - tree.x_min[j]) / tree.x_scale[j] for j in range(tree.n_features)]
        node = 1
        while node < tree.n_leaves:
            margin = sum(tree.weights[node - 1][j] * xs[j] for j in range(tree.n_features))
            node = 2 * node if margin <= tree.thresholds[node - 1] else 2 * node + 1
        i = node - tree.n_leaves
        value = tree.leaf_intercepts[i] + sum(tree.leaf_coefs[i][j] * xs[j] for j in range(tree.n_features))
        value = min(max(value, tree.leaf_lower[i]), tree.leaf_upper[i])
        preds.append(tree.y_min + tree.y_scale * value)
        leaves.append(node)
    return np.array(preds), np.array(leaves)


@pytest.mark.parametrize("leaf", ["constant", "linear"])
@pytest.mark.parametrize("depth", [1, 3, 6])
def test_vectorized_inference_equals_a_per_row_loop(leaf, depth):
    tree, X, _ = make_tree(depth=depth, p=4, leaf=leaf, seed=depth)
    want_pred, want_leaf = loop_predict(tree, X)
    np.testing.assert_array_equal(tree.apply(X), want_leaf)
    np.testing.assert_allclose(tree.predict(X), want_pred, rtol=1e-12, atol=1e-12)


def test_a_linear_leaf_with_bounds_clamps_its_line_and_says_so_in_its_rule():
    tree, X, _ = make_tree(depth=2, p=3, leaf="linear", seed=2)
    leaf = tree.apply(X) - tree.n_leaves
    line = tree.leaf_intercepts[leaf] + [sum(k * x for k, x in zip(tree.leaf_coefs[i], xs))  # left to right
                                         for i, xs in zip(leaf, tree.scale_X(X))]
    pred = tree.predict_scaled(X)
    bounded = leaf < tree.n_leaves - 1
    lower, upper = tree.leaf_lower[leaf[bounded]], tree.leaf_upper[leaf[bounded]]
    assert np.any(line[bounded] < lower) and np.any(line[bounded] > upper)
    assert np.all((pred[bounded] >= lower) & (pred[bounded] <= upper))
    np.testing.assert_array_equal(pred[~bounded], line[~bounded])  # the last leaf has no bounds
    lo, hi = tree.leaf_bounds_original(tree.n_leaves)
    assert lo == tree.y_min + tree.y_scale * tree.leaf_lower[0] and hi > lo
    assert tree.leaf_bounds_original(2 * tree.n_leaves - 1) is None
    rules = export.rule_lines(tree)
    assert sum("clip(" in line for line in rules) == tree.n_leaves - 1


@pytest.mark.parametrize("names, message", [
    (("temp", "\udcff"), "'\\\\udcff' holds a lone surrogate"), (("a", "a"), "'a' appears more than once")])
def test_a_tree_refuses_feature_names_that_an_export_could_not_write_or_a_table_could_not_tell_apart(names, message):
    with pytest.raises(ValueError, match=message):
        stump(names=names)


def test_decision_path_walks_parent_to_child_and_ends_in_the_leaf():
    tree, X, _ = make_tree(depth=4, seed=3)
    path = tree.decision_path(X)
    assert path.shape == (len(X), 5)
    assert np.all(path[:, 0] == 1)
    assert np.all(path[:, 1:] // 2 == path[:, :-1])
    np.testing.assert_array_equal(path[:, -1], tree.apply(X))


def test_rules_in_original_units_route_like_the_scaled_model():
    tree, X, _ = make_tree(depth=3, seed=11)
    path = tree.decision_path(X)
    for node in range(1, tree.n_leaves):
        w, c = tree.split_in_original_units(node)
        at = path[:, int(node).bit_length() - 1] == node
        went_left = path[at, int(node).bit_length()] == 2 * node
        margin = X[at] @ w - c
        clear = np.abs(margin) > 1e-9
        np.testing.assert_array_equal((margin <= 0)[clear], went_left[clear])


def test_linear_leaf_in_original_units_reproduces_predictions():
    tree, X, _ = make_tree(depth=2, leaf="linear", seed=2)
    leaf = tree.apply(X)
    for i, x in enumerate(X[:20]):
        h, k = tree.leaf_in_original_units(leaf[i])
        lo, hi = tree.leaf_bounds_original(leaf[i]) or (-np.inf, np.inf)
        assert np.clip(h + k @ x, lo, hi) == pytest.approx(tree.predict(x[None])[0], rel=1e-9, abs=1e-9)


def test_parameters_are_counted_as_in_the_paper():
    constant, _, _ = make_tree(depth=3, p=4)
    linear, _, _ = make_tree(depth=3, p=4, leaf="linear")
    assert constant.n_parameters == 7 * 5 + 8 * 1
    assert linear.n_parameters == 7 * 5 + 8 * 5
    linear.leaf_coefs[[0, 5]] = 0.0  # two leaves hold their mean (too few rows, or not preferred by GCV)
    assert linear.n_parameters == 7 * 5 + 6 * 5 + 2 * 1


def test_wrong_column_count_is_a_clear_error():
    tree, X, _ = make_tree(depth=2, p=3)
    with pytest.raises(ValueError, match="3 columns"):
        tree.predict(X[:, :2])


def test_a_missing_or_infinite_input_routes_left_and_a_constant_leaf_still_gives_its_value():
    tree = stump()
    rows = np.array([[np.nan, 0.0], [0.0, np.inf], [np.inf, 0.0]])  # NaN and inf margins: left; +inf margin: right
    np.testing.assert_array_equal(tree.apply(rows), [2, 2, 3])
    np.testing.assert_array_equal(tree.predict(rows), [10.0, 10.0, 20.0])  # as the generated code does

