"""ObliqueTree: hard inference, JSON round-trip and validation, rules in original units."""

import json

import numpy as np
import pytest

from get_core.tree import ModelFormatError, ObliqueTree
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
    line = tree.leaf_intercepts[leaf] + np.einsum("ij,ij->i", tree.scale_X(X), tree.leaf_coefs[leaf])
    pred = tree.predict_scaled(X)
    bounded = leaf < tree.n_leaves - 1
    lower, upper = tree.leaf_lower[leaf[bounded]], tree.leaf_upper[leaf[bounded]]
    assert np.any(line[bounded] < lower) and np.any(line[bounded] > upper)
    assert np.all((pred[bounded] >= lower) & (pred[bounded] <= upper))
    np.testing.assert_array_equal(pred[~bounded], line[~bounded])  # the last leaf has no bounds
    lo, hi = tree.leaf_bounds_original(tree.n_leaves)
    assert lo == tree.y_min + tree.y_scale * tree.leaf_lower[0] and hi > lo
    assert tree.leaf_bounds_original(2 * tree.n_leaves - 1) is None
    rules = tree.export_text()
    assert rules.count("clip(") == tree.n_leaves - 1


def test_a_version_1_model_without_bounds_still_loads_unbounded():
    tree, X, _ = make_tree(depth=2, leaf="linear", seed=3)
    data = tree.to_dict()
    for key in ("leaf_lower", "leaf_upper"):
        data.pop(key)
    data["version"] = 1
    old = ObliqueTree.from_dict(data)
    assert np.all(np.isinf(old.leaf_lower)) and np.all(np.isinf(old.leaf_upper)) and not old.has_leaf_bounds
    np.testing.assert_array_equal(old.predict_scaled(X), old.leaf_intercepts[old.apply(X) - old.n_leaves]
                                  + np.einsum("ij,ij->i", old.scale_X(X), old.leaf_coefs[old.apply(X) - old.n_leaves]))


def test_crossed_leaf_bounds_are_refused():
    tree, _, _ = make_tree(depth=1, leaf="linear", seed=3)
    data = tree.to_dict()
    data["leaf_lower"] = [1.0, None]
    data["leaf_upper"] = [0.5, None]
    with pytest.raises(ModelFormatError, match="leaf_lower"):
        ObliqueTree.from_dict(data)


def test_decision_path_walks_parent_to_child_and_ends_in_the_leaf():
    tree, X, _ = make_tree(depth=4, seed=3)
    path = tree.decision_path(X)
    assert path.shape == (len(X), 5)
    assert np.all(path[:, 0] == 1)
    assert np.all(path[:, 1:] // 2 == path[:, :-1])
    np.testing.assert_array_equal(path[:, -1], tree.apply(X))


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_json_round_trip_gives_identical_predictions(leaf):
    tree, X, _ = make_tree(depth=3, leaf=leaf, seed=5, empty_subtree=True, names=["a <b>", 'quote"d', "ü"])
    tree.meta["note"] = "kept"
    loaded = ObliqueTree.from_dict(json.loads(json.dumps(tree.to_dict())))
    np.testing.assert_array_equal(loaded.predict(X), tree.predict(X))
    np.testing.assert_array_equal(loaded.n_samples, tree.n_samples)
    assert np.isnan(loaded.node_values).sum() == np.isnan(tree.node_values).sum() > 0
    np.testing.assert_array_equal(loaded.leaf_lower, tree.leaf_lower)  # infinities survive JSON as null
    np.testing.assert_array_equal(loaded.leaf_upper, tree.leaf_upper)
    assert loaded.feature_names == tree.feature_names and loaded.meta == {"note": "kept"}


def test_a_loaded_tree_shares_no_meta_with_the_dict_it_came_from():
    tree, _, _ = make_tree(depth=1)
    tree.meta["config"] = {"alpha_range": [5.0, 150.0]}
    data = tree.to_dict()
    loaded = ObliqueTree.from_dict(data)
    loaded.meta["config"]["alpha_range"].append(1.0)
    loaded.meta["note"] = "changed"
    assert data["meta"] == tree.meta == {"config": {"alpha_range": [5.0, 150.0]}}


def test_to_dict_is_json_ready_when_meta_holds_numpy_values():
    from get_core.estimator import GETRegressor

    X = np.random.default_rng(0).normal(size=(40, 2))
    tree = GETRegressor(depth=np.int64(1), n_starts=np.int64(1), n_epochs=2, random_state=0).fit(X, X[:, 0]).tree_
    tree.meta["alphas"] = np.array([[5.0, 50.0]])
    tree.meta["pair"] = (np.float32(0.5), np.bool_(True))
    data = json.loads(json.dumps(tree.to_dict()))
    assert data["meta"]["config"]["depth"] == 1 and data["meta"]["alphas"] == [[5.0, 50.0]]
    assert data["meta"]["pair"] == [0.5, True]
    assert isinstance(tree.meta["alphas"], np.ndarray)  # the tree itself is left as it was


def test_deeply_nested_meta_is_copied_without_exhausting_the_stack():
    tree, _, _ = make_tree(depth=1)
    data = json.loads(json.dumps(tree.to_dict()))
    data["meta"] = json.loads('{"a": ' * 900 + "1" + "}" * 900)
    loaded = ObliqueTree.from_dict(data)
    assert loaded.meta is not data["meta"] and "a" in loaded.meta


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.pop("weights"), "weights"),
    (lambda d: d.update(version=99), "version"),
    (lambda d: d.update(schema="other"), "schema"),
    (lambda d: d.update(depth=0), "depth"),
    (lambda d: d["thresholds"].pop(), "thresholds"),
    (lambda d: d["weights"][0].__setitem__(0, "x"), "weights"),
    (lambda d: d["weights"][0].__setitem__(0, float("nan")), "weights"),
    (lambda d: d.update(n_samples=[-1] * len(d["n_samples"])), "n_samples"),
    (lambda d: d.update(x_scale=[0.0] * len(d["x_scale"])), "x_scale"),
    (lambda d: d.update(leaf_type="cubic"), "leaf_type"),
    (lambda d: d.update(feature_names="abc"), "feature_names"),
    (lambda d: d.update(y_scale=True), "y_scale"),
])
def test_malformed_model_json_is_refused_naming_the_field(mutate, field):
    tree, _, _ = make_tree(depth=2)
    data = json.loads(json.dumps(tree.to_dict()))
    mutate(data)
    with pytest.raises(ModelFormatError, match=field):
        ObliqueTree.from_dict(data)
    with pytest.raises(ModelFormatError):
        ObliqueTree.from_dict([1, 2])


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


def test_export_text_of_a_stump_reads_as_nested_rules():
    assert stump().export_text() == (
        "if 2*temp - 1*pressure <= 3:  # node 1\n"
        "    return 10  # leaf 2, 3 train rows\n"
        "else:\n"
        "    return 20  # leaf 3, 2 train rows\n"
    )


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


def test_rules_keep_one_line_per_test_whatever_the_feature_names():
    tree = stump(names=("inlet\ntemp", "pressure  (bar)"))
    rules = tree.export_text(max_terms=0)  # at least one term is always shown
    assert rules.splitlines()[0] == "if 2*inlet temp + ... (1 more terms) <= 3:  # node 1"
    assert len(rules.splitlines()) == 4
