"""Baselines: CART and random forest on the same split, counted and timed as the paper does."""

import json
import math

import numpy as np
import pytest

from get_core import baselines as baseline_models
from get_core.model.tree import ObliqueTree


def _data(n=120, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = 2 * X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=n)
    return X[:90], y[:90], X[90:], y[90:]


def _stump(p=3):
    w = np.zeros((1, p)); w[0, 0] = 1.0
    return ObliqueTree(weights=w, thresholds=[0.5], leaf_intercepts=[0.2, 0.8], leaf_coefs=np.zeros((2, p)),
                       n_samples=[4, 2, 2], node_values=[0.5, 0.2, 0.8], x_min=np.zeros(p), x_scale=np.ones(p))


@pytest.fixture(scope="module")
def baselines():
    Xtr, ytr, Xte, yte = _data()
    return baseline_models.fit_baselines(Xtr, ytr, Xte, yte, depth=2, random_state=0, n_repeats=1)


def test_fit_baselines_is_json_ready_and_complete(baselines):
    again = json.loads(json.dumps(baselines, allow_nan=False))
    assert again["schema"] == baseline_models.SCHEMA and again["n_train"] == 90 and again["n_test"] == 30
    for key in ("cart", "random_forest"):
        entry = again["models"][key]
        assert set(entry) >= {"name", "r2", "rmse", "n_parameters", "parameter_bytes", "size_bytes",
                              "predict_ms_per_10k", "fit_seconds", "test_predictions"}
        assert len(entry["test_predictions"]) == 30
        assert entry["rmse"] > 0 and entry["size_bytes"] > 0 and entry["predict_ms_per_10k"] > 0
        assert entry["parameter_bytes"] == 8 * entry["n_parameters"]
    assert len(again["forest"]["feature_importances"]) == 3
    assert len(again["forest"]["oob_train_predictions"]) == 90
    assert again["feature_names"] == ["x0", "x1", "x2"]


def test_cart_counts_two_per_branch_and_one_per_leaf():
    from sklearn.tree import DecisionTreeRegressor

    Xtr, ytr, _, _ = _data()
    # a full depth-2 regression tree on 90 distinct rows has 3 branch nodes and 4 leaves
    cart = DecisionTreeRegressor(max_depth=2, random_state=0).fit(Xtr, ytr)
    assert baseline_models.count_tree_parameters(cart) == 2 * 3 + 4


def test_forest_beats_the_tuned_cart_on_a_linear_target(baselines):
    assert baselines["models"]["random_forest"]["r2"] > baselines["models"]["cart"]["r2"]


def test_same_seed_gives_same_forest_predictions():
    Xtr, ytr, Xte, yte = _data()
    a = baseline_models.fit_baselines(Xtr, ytr, Xte, yte, depth=2, random_state=3, n_repeats=1)
    b = baseline_models.fit_baselines(Xtr, ytr, Xte, yte, depth=2, random_state=3, n_repeats=1)
    assert a["models"]["random_forest"]["test_predictions"] == b["models"]["random_forest"]["test_predictions"]


def test_mismatched_rows_are_refused_with_a_message():
    Xtr, ytr, Xte, yte = _data()
    with pytest.raises(ValueError, match="rows"):
        baseline_models.fit_baselines(Xtr, ytr[:-1], Xte, yte, depth=2, random_state=0)


def test_single_test_row_gives_no_r2_but_an_rmse():
    Xtr, ytr, Xte, yte = _data()
    out = baseline_models.fit_baselines(Xtr, ytr, Xte[:1], yte[:1], depth=1, random_state=0, n_repeats=1)
    assert out["models"]["cart"]["r2"] is None and out["models"]["cart"]["rmse"] >= 0


def test_evaluate_tree_counts_the_papers_parameters():
    tree = _stump()
    X = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    entry = baseline_models.evaluate_tree(tree, X, [0.2, 0.8], n_repeats=1)
    # one split on one of its 3 features: its weight and threshold (a dense split would count 4), and 2 leaves
    assert entry["n_parameters"] == 2 + 2 and entry["rmse"] == 0.0 and entry["r2"] == 1.0
    rows = baseline_models.comparison_rows({"models": {"cart": entry}}, entry)
    assert [r["name"] for r in rows] == ["GET", "GET"] and "test_predictions" not in rows[0]


def test_node_forest_comparison_uses_only_rows_reaching_the_node():
    tree = _stump()
    X = np.array([[0.0, 0, 0], [0.1, 0, 0], [1.0, 0, 0]])
    y = np.array([0.2, 0.4, 0.8])
    out = baseline_models.node_forest_comparison(tree, 2, X, y, [0.3, None, 0.0])
    assert out["n"] == 1 and out["tree_rmse"] == 0.0 and math.isclose(out["forest_rmse"], 0.1)
    root = baseline_models.node_forest_comparison(tree, 1, X, y, [0.2, 0.4, 0.8])
    assert root["n"] == 3 and root["forest_rmse"] == 0.0


def test_baselines_take_a_numpy_integer_depth_and_stay_json_ready():
    Xtr, ytr, Xte, yte = _data()
    out = baseline_models.fit_baselines(Xtr, ytr, Xte, yte, depth=np.int64(2), random_state=0, n_repeats=1)
    assert json.loads(json.dumps(out, allow_nan=False))["models"]["cart"]["n_parameters"] > 0
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        baseline_models.fit_baselines(Xtr, ytr, Xte, yte, depth=2.5, random_state=0, n_repeats=1)


def test_a_large_tables_forest_grows_each_tree_on_a_bounded_sample_of_rows(monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.random((600, 3))
    y = X[:, 0] + rng.normal(scale=0.3, size=600)  # noisy: fully grown trees have about one leaf per drawn row
    whole = baseline_models.fit_baselines(X[:500], y[:500], X[500:], y[500:], 2, 0)["models"]["random_forest"]
    monkeypatch.setattr(baseline_models, "FOREST_MAX_SAMPLES", 100)  # the bound, scaled down with the table
    bounded = baseline_models.fit_baselines(X[:500], y[:500], X[500:], y[500:], 2, 0)["models"]["random_forest"]
    per_tree = bounded["n_parameters"] / baseline_models.FOREST_TREES
    assert per_tree <= 3 * (2 * 100 - 1)  # at most 100 distinct rows: at most 199 nodes, 3 parameters each at most
    assert bounded["n_parameters"] < 0.4 * whole["n_parameters"]


def test_the_baselines_are_fitted_at_their_usual_settings_with_carts_depth_tuned_on_a_validation_split():
    """Issue 48: every tree of the forest, HistGradientBoosting for regression too, and CART at the depth a 2:1 split
    of the training rows prefers (not the GET tree's), named with it."""
    from sklearn.model_selection import train_test_split
    from sklearn.tree import DecisionTreeRegressor

    Xtr, ytr, Xte, yte = _data()
    out = baseline_models.fit_baselines(Xtr, ytr, Xte, yte, depth=2, random_state=0, n_repeats=1)
    models = out["models"]
    assert models["random_forest"]["n_trees"] == baseline_models.FOREST_TREES
    assert models["random_forest"]["name"] == "Random forest"
    boosting = models["hist_gradient_boosting"]
    assert boosting["r2"] is not None and boosting["n_parameters"] > models["cart"]["n_parameters"]
    X_tr, X_val, y_tr, y_val = train_test_split(Xtr, ytr, test_size=baseline_models.CART_VALIDATION_FRACTION,
                                                random_state=0)
    scores = {d: DecisionTreeRegressor(max_depth=d, random_state=0).fit(X_tr, y_tr).score(X_val, y_val)
              for d in baseline_models.CART_DEPTHS}
    best = min(d for d in scores if scores[d] == max(scores.values()))  # ties: the shallower
    assert models["cart"]["depth"] == best and models["cart"]["name"] == f"CART (depth {best}, tuned)"
    assert out["depth"] == 2  # the GET tree's depth, recorded beside them


def test_a_class_carts_depth_is_tuned_by_accuracy_and_too_few_rows_to_split_grow_the_deepest():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(90, 2))
    y = np.where(X[:, 0] > 0.5, "a", "b")
    out = baseline_models.fit_class_baselines(X[:60], y[:60], X[60:], y[60:], depth=4, random_state=0, n_repeats=1)
    assert out["models"]["cart"]["depth"] == 1 and out["models"]["cart"]["accuracy"] > 0.9  # one cut is all it needs
    from sklearn.tree import DecisionTreeRegressor

    lone = baseline_models.tuned_cart(lambda d: DecisionTreeRegressor(max_depth=d), X[:2], np.array([0.0, 1.0]), 0)
    assert lone.max_depth == baseline_models.CART_DEPTHS[-1]


def test_out_of_bag_predictions_match_sklearns_and_are_missing_for_rows_every_tree_drew():
    from sklearn.ensemble import RandomForestRegressor

    Xtr, ytr, _, _ = _data()
    forest = RandomForestRegressor(n_estimators=30, oob_score=True, random_state=0).fit(Xtr, ytr)
    np.testing.assert_allclose(baseline_models.oob_predictions(forest, Xtr), forest.oob_prediction_, rtol=1e-6)
    one = RandomForestRegressor(n_estimators=1, random_state=0).fit(Xtr, ytr)
    missing = np.isnan(baseline_models.oob_predictions(one, Xtr))
    drawn = np.zeros(len(Xtr), dtype=bool)
    drawn[one.estimators_samples_[0]] = True
    assert missing.any() and np.array_equal(missing, drawn)
