"""k-sparse splits (``max_split_features``): the constraint holds exactly, planted supports are found, the CART
start bounds the result, dense fits are unchanged, and exports and model files keep the sparsity."""

import json

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

from get_core import export

from get_core.model import model_file
from get_core.estimator import GETRegressor, GETRegressorCV, choose_split_features
from get_core.model.model_file import ModelFormatError
from get_core.views import labels


def planted(seed: int = 0, n: int = 2000, p: int = 10):
    """Depth 2: the root splits on x0 + x1, its children on x2 - x3 and 2 x4 + x5; the other 4 features are noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    left, right = X[:, 2] - X[:, 3] <= 0.0, 2 * X[:, 4] + X[:, 5] <= 1.5
    leaf = np.where(X[:, 0] + X[:, 1] <= 1.0, np.where(left, 0, 1), np.where(right, 2, 3))
    return X, np.array([0.0, 1.0, 2.0, 3.0])[leaf] + 0.05 * rng.normal(size=n)


def supports(tree) -> list[frozenset]:
    return [frozenset(np.flatnonzero(w).tolist()) for w in tree.weights]


def random_data(seed: int, n: int = 150, p: int = 6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ rng.normal(size=p) + np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=n)


def test_two_features_per_split_recover_the_planted_pair_at_every_node():
    X, y = planted()
    tree = GETRegressor(depth=2, n_starts=4, n_epochs=400, random_state=0, max_split_features=2).fit(X, y).tree_
    found = supports(tree)
    assert found[0] == {0, 1}
    assert set(found[1:]) == {frozenset({2, 3}), frozenset({4, 5})}
    assert tree.meta["train_r2"] > 0.97


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_no_split_uses_more_than_k_features_and_the_others_weigh_exactly_zero(k, depth):
    X, y = random_data(seed=10 * k + depth)
    tree = GETRegressor(depth=depth, n_starts=2, n_epochs=15, random_state=k, max_split_features=k,
                        leaf="linear" if depth % 2 else "constant").fit(X, y).tree_
    assert np.count_nonzero(tree.weights, axis=1).max() <= k
    assert not np.signbit(tree.weights[tree.weights == 0]).any()  # stored as 0.0, never -0.0
    assert tree.meta["config"]["max_split_features"] == k


def test_polish_keeps_every_split_within_k_features():
    X, y = random_data(seed=3)
    tree = GETRegressor(depth=3, n_starts=2, n_epochs=15, random_state=0, max_split_features=2,
                        polish=True).fit(X, y).tree_
    assert tree.meta["polish_nodes_visited"] > 0
    assert np.count_nonzero(tree.weights, axis=1).max() <= 2


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_epochs", [1, 30])
def test_one_feature_per_split_is_never_worse_on_the_training_rows_than_cart(seed, n_epochs):
    X, y = random_data(seed)
    fitted = GETRegressor(depth=3, n_starts=2, n_epochs=n_epochs, random_state=seed, max_split_features=1).fit(X, y)
    cart = DecisionTreeRegressor(max_depth=3, random_state=seed).fit(X, y)
    assert np.mean((fitted.predict(X) - y) ** 2) <= np.mean((cart.predict(X) - y) ** 2) * (1 + 1e-9)
    assert np.count_nonzero(fitted.tree_.weights, axis=1).max() <= 1


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_dense_splits_are_bit_identical_whether_max_split_features_is_omitted_none_or_at_least_p(leaf):
    X, y = random_data(seed=5)
    settings = dict(depth=2, n_starts=3, n_epochs=20, random_state=1, leaf=leaf)
    trees = [GETRegressor(**settings, **extra).fit(X, y).tree_
             for extra in ({}, {"max_split_features": None}, {"max_split_features": X.shape[1]})]
    for other in trees[1:]:
        for name in ("weights", "thresholds", "leaf_intercepts", "leaf_coefs"):
            np.testing.assert_array_equal(getattr(other, name), getattr(trees[0], name), err_msg=name)
    assert np.count_nonzero(trees[0].weights, axis=1).max() > 2  # dense indeed: the comparison could fail


@pytest.fixture(scope="module")
def sparse_tree():
    X, y = planted(seed=1, n=600)
    tree = GETRegressor(depth=2, n_starts=2, n_epochs=60, random_state=0, max_split_features=2).fit(X, y).tree_
    return tree, X


def test_rules_and_labels_of_a_sparse_tree_show_only_its_non_zero_terms(sparse_tree):
    tree, _ = sparse_tree
    ifs = [line for line in export.rule_lines(tree) if line.lstrip().startswith("if ")]
    assert len(ifs) == tree.n_branches
    assert all(1 <= line.split("#")[0].count("*") <= 2 for line in ifs)
    assert sum(line.split("#")[0].count("*") for line in ifs) == np.count_nonzero(tree.weights)
    for node in range(1, tree.n_branches + 1):
        text = labels.split_text(tree, node, max_terms=3)
        assert "more" not in text
        assert text.count(labels.TIMES) == np.count_nonzero(tree.weights[node - 1]) <= 2
    assert "(1 more)" not in export.html_report(tree, diagram_levels=3, created="now")


def test_a_nan_in_a_feature_no_split_uses_does_not_change_a_sparse_trees_prediction(sparse_tree):
    tree, X = sparse_tree
    unused = np.flatnonzero(~tree.weights.any(axis=0))
    assert unused.size
    rows = X[:50].copy()
    rows[:, unused] = np.nan
    np.testing.assert_array_equal(tree.apply(rows), tree.apply(X[:50]))
    np.testing.assert_array_equal(tree.predict(rows), tree.predict(X[:50]))  # constant leaves ignore x too


def test_the_model_file_keeps_k_and_refuses_a_file_whose_splits_break_it(sparse_tree):
    tree, _ = sparse_tree
    data = json.loads(model_file.model_json(tree))
    assert data["meta"]["config"]["max_split_features"] == 2
    assert np.count_nonzero(data["weights"]) == np.count_nonzero(tree.weights)  # zeros stored as today
    loaded = model_file.from_dict(data)
    np.testing.assert_array_equal(loaded.weights, tree.weights)
    data["weights"][0] = [0.5] * len(data["weights"][0])
    with pytest.raises(ModelFormatError, match="node 1 uses 10 features"):
        model_file.from_dict(data)
    data["meta"]["config"]["max_split_features"] = "two"
    with pytest.raises(ModelFormatError, match="max_split_features"):
        model_file.from_dict(data)


def path_entry(k, r2):
    return {"max_split_features": k, "validation_r2": r2}


@pytest.mark.parametrize("tolerance, expected", [(0.0, None), (0.005, 3), (0.02, 2), (0.2, 1)])
def test_the_path_chooses_the_fewest_features_per_split_within_the_tolerance_of_the_best(tolerance, expected):
    path = [path_entry(1, 0.80), path_entry(2, 0.885), path_entry(3, 0.897), path_entry(5, 0.890),
            path_entry(None, 0.900)]
    assert choose_split_features(path, tolerance) == expected


def test_the_depth_search_with_auto_reports_every_k_and_refits_the_one_it_chose():
    X, y = planted(seed=2, n=400)
    cv = GETRegressorCV(depths=(2,), n_starts=2, n_epochs=30, random_state=0, max_split_features="auto",
                        sparsity_tolerance=0.01).fit(X, y)
    path = cv.path_results_
    assert [r["max_split_features"] for r in path] == [1, 2, 3, 5, None]
    assert cv.best_max_split_features_ == choose_split_features(path, 0.01)
    assert all(r["widest_split"] <= (r["max_split_features"] or X.shape[1]) for r in path)
    assert path[0]["n_parameters"] < path[-1]["n_parameters"]
    k = cv.best_max_split_features_
    assert cv.tree_.meta["config"]["max_split_features"] == k
    assert {r["max_split_features"] for r in cv.cv_results_} == {1, 2, 3, 5, None}


def test_auto_is_refused_outside_the_depth_search():
    with pytest.raises(ValueError, match="max_split_features"):
        GETRegressor(max_split_features="auto").fit(np.ones((5, 2)), np.arange(5.0))


def test_the_torch_path_finds_the_same_sparse_tree_as_the_fused_kernel(monkeypatch):
    from get_core.engine import native

    X, y = planted(seed=3, n=1000)
    settings = dict(depth=2, n_starts=3, n_epochs=200, random_state=0, max_split_features=2)
    kernel_tree = GETRegressor(**settings).fit(X, y).tree_
    monkeypatch.setattr(native, "available", lambda *a: False)
    torch_tree = GETRegressor(**settings).fit(X, y).tree_
    assert supports(torch_tree) == supports(kernel_tree)
    assert torch_tree.meta["train_r2"] == pytest.approx(kernel_tree.meta["train_r2"], abs=0.01)



def test_with_groups_a_split_keeps_the_k_groups_of_largest_norm_whole():
    import torch

    from get_core.engine.sparse import top_k_mask

    weights = torch.tensor([[[0.9, 0.0, 0.6, 0.6, 0.6, 0.1]]])  # groups {0, 1}, {2, 3, 4}, {5}: norms 0.81, 1.08, 0.01
    groups = torch.tensor([0, 0, 1, 1, 1, 2])
    assert top_k_mask(weights, 1, groups).tolist() == [[[False, False, True, True, True, False]]]
    assert top_k_mask(weights, 2, groups).tolist() == [[[True, False, True, True, True, False]]]  # zero stays out
    assert top_k_mask(weights, 1).tolist() == [[[True, False, False, False, False, False]]]  # no groups: columns
