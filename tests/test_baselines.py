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


def test_cart_of_depth_two_counts_two_per_branch_and_one_per_leaf(baselines):
    # a full depth-2 regression tree on 90 distinct rows has 3 branch nodes and 4 leaves
    assert baselines["models"]["cart"]["n_parameters"] == 2 * 3 + 4


def test_forest_beats_a_depth_two_cart_on_a_linear_target(baselines):
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
    assert entry["n_parameters"] == 4 + 2 and entry["rmse"] == 0.0 and entry["r2"] == 1.0
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


class TickingClock:
    """A fake clock that moves ``tick`` seconds each time it is read: a forest's pace without wall time."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now - self.tick


def test_more_trees_grows_while_the_next_step_at_the_pace_so_far_ends_within_the_seconds():
    step = baseline_models.FOREST_STEP
    assert baseline_models.more_trees(elapsed=1.0, n_trees=step, seconds=2.0)  # next step ends at 2.0
    assert not baseline_models.more_trees(elapsed=1.0, n_trees=step, seconds=1.9)
    assert baseline_models.more_trees(elapsed=2.0, n_trees=4 * step, seconds=2.5)  # a quarter second a step
    assert not baseline_models.more_trees(elapsed=0.0, n_trees=baseline_models.FOREST_TREES, seconds=100.0)


def test_a_budgeted_forest_grows_in_steps_until_its_seconds_are_spent_and_has_at_least_one_step():
    from sklearn.ensemble import RandomForestRegressor

    Xtr, ytr, _, _ = _data()
    step = baseline_models.FOREST_STEP
    # each clock read is one second later: started 0, first step done at 1, second at 2, third at 3 (pace 1 a step)
    grown = baseline_models.grow_forest(RandomForestRegressor(n_estimators=baseline_models.FOREST_TREES,
                                                              random_state=0), Xtr, ytr, 3.5, TickingClock(1.0))
    assert len(grown.estimators_) == 3 * step  # a fourth step would end at 4 > 3.5
    none_left = baseline_models.grow_forest(RandomForestRegressor(random_state=0), Xtr, ytr, 0.0, TickingClock(1.0))
    assert len(none_left.estimators_) == step
    plenty = baseline_models.grow_forest(RandomForestRegressor(random_state=0), Xtr, ytr, 1e9, TickingClock(1e-3))
    assert len(plenty.estimators_) == baseline_models.FOREST_TREES  # never more than the unbudgeted forest


def test_a_forest_cut_short_by_its_budget_says_how_many_trees_it_has():
    Xtr, ytr, Xte, yte = _data()
    out = baseline_models.fit_baselines(Xtr, ytr, Xte, yte, depth=2, random_state=0, n_repeats=1,
                                        forest_seconds=0.0)["models"]["random_forest"]
    assert out["n_trees"] == baseline_models.FOREST_STEP
    assert out["name"] == f"Random forest ({baseline_models.FOREST_STEP} trees)"
    whole = baseline_models.fit_baselines(Xtr, ytr, Xte, yte, depth=2, random_state=0, n_repeats=1)
    assert whole["models"]["random_forest"]["name"] == "Random forest"
    assert whole["models"]["random_forest"]["n_trees"] == baseline_models.FOREST_TREES


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
