"""The training pipeline: recovers planted oblique trees, keeps a warm start, is seeded, and scales robustly."""

import copy
from dataclasses import replace

import numpy as np
import pytest
import torch
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from get_core import budget
from get_core.budget import counting
from get_core.engine import leaves
from get_core.config import GETConfig
from get_core.data.columns import squeezed_features
from get_core.engine.train import MinMax, cpu_record, train
from get_core.views import summary
from tests.clock import Clock
from tests.planted import planted_depth2


def test_planted_depth2_oblique_tree_is_recovered_to_the_noise_ceiling_and_cart_is_clearly_worse():
    X, y, clean = planted_depth2(3000, seed=0)
    X_test, y_test, clean_test = planted_depth2(2000, seed=1)
    ceiling = r2_score(y_test, clean_test)  # the best any model can do on the test rows
    tree = train(X, y, GETConfig(depth=2, n_starts=4, n_epochs=1000, random_state=0))
    got = r2_score(y_test, tree.predict(X_test))
    cart = r2_score(y_test, DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y).predict(X_test))
    assert got >= ceiling - 0.03, (got, ceiling)
    assert cart <= got - 0.10, (cart, got)


def test_linear_leaves_recover_a_planted_piecewise_linear_function():
    rng = np.random.default_rng(2)
    X = rng.random((2000, 4))
    left = 0.7 * X[:, 0] + X[:, 1] <= 0.9
    y = np.where(left, 2 * X[:, 2] + 1, -3 * X[:, 3] + 0.5) + rng.normal(scale=0.01, size=len(X))
    linear = train(X, y, GETConfig(depth=1, leaf="linear", n_starts=4, n_epochs=300, random_state=0))
    constant = train(X, y, GETConfig(depth=1, n_starts=4, n_epochs=300, random_state=0))
    assert linear.meta["train_r2"] > 0.995
    assert constant.meta["train_r2"] < 0.9
    h, k = linear.leaf_in_original_units(2)  # left leaf: y = 2 x2 + 1
    np.testing.assert_allclose([h, *k], [1, 0, 0, 2, 0], atol=0.05)


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_a_warm_start_tree_fitted_on_a_subset_is_never_lost_on_all_rows(leaf):
    rng = np.random.default_rng(4)
    X = rng.random((600, 4)) * [1, 10, 100, 1] + [0, 5, -50, 2]  # scales differ: the subset's min-max is not all's
    y = np.sin(5 * X[:, 0]) + X[:, 1] / 10 * (X[:, 2] > 0) + rng.normal(scale=0.2, size=600)
    config = GETConfig(depth=3, leaf=leaf, n_starts=3, n_epochs=60, random_state=0)
    subset = train(X[:250], y[:250], config)
    warm = train(X, y, GETConfig(depth=3, leaf=leaf, n_starts=1, n_epochs=1, random_state=5), warm_start=subset)

    same_splits = leaves.refit_tree_leaves(copy.deepcopy(subset), X,
                                           (y - subset.y_min) / subset.y_scale, config.linear_leaves,
                                           config.clip_leaves)  # subset's regions, leaves from all rows
    assert warm.meta["train_r2"] >= r2_score(y, same_splits.predict(X)) - 1e-6
    stayed = np.mean(warm.apply(X) == same_splits.apply(X))  # the warm start's regions, after one epoch
    assert stayed == 1.0 if leaf == "constant" else stayed >= 0.85  # a linear tree's epoch moved 10% of rows here
    with pytest.raises(ValueError, match="depth-2 tree"):
        train(X, y, GETConfig(depth=2, n_starts=1, n_epochs=1), warm_start=subset)


def test_same_seed_same_tree_and_different_seed_different_tree():
    X, y, _ = planted_depth2(600, seed=5)
    cfg = dict(depth=3, n_starts=3, n_epochs=40)
    a = train(X, y, GETConfig(random_state=1, **cfg))
    b = train(X, y, GETConfig(random_state=1, **cfg))
    c = train(X, y, GETConfig(random_state=2, **cfg))
    np.testing.assert_array_equal(a.weights, b.weights)
    assert not np.array_equal(a.weights, c.weights)


def _outlier_data(outlier: float | None):
    """sin(8 u) + v on the unit square, one row's u replaced by ``outlier`` (a missing-value code, say)."""
    X = np.random.default_rng(0).uniform(0, 1, (1000, 2))
    y = np.sin(8 * X[:, 0]) + X[:, 1]
    if outlier is not None:
        X[0, 0] = outlier
    return X, y


def test_robust_scaling_keeps_gets_gain_over_cart_when_one_far_outlier_squeezes_min_max():
    """Min-max scaling packs the other 999 rows into a tenth of [0, 1], where the soft splits hardly move."""
    config = GETConfig(depth=3, n_starts=3, n_epochs=300, random_state=0)
    X, y = _outlier_data(None)
    clean = r2_score(y, train(X, y, config).predict(X))
    X, y = _outlier_data(10.0)
    cart = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).score(X, y)
    minmax = r2_score(y, train(X, y, config).predict(X))
    robust = r2_score(y, train(X, y, replace(config, scaling="robust")).predict(X))
    assert minmax < cart + 0.01 < clean - 0.04  # the outlier costs min-max GET its whole gain over CART
    assert robust > clean - 0.02  # ... which robust scaling gets back


def test_robust_scaling_maps_the_1st_and_99th_percentiles_to_0_and_1_and_keeps_min_max_for_mostly_one_value():
    X = np.c_[np.arange(101.0), np.r_[np.zeros(100), 5.0]]
    X[0, 0] = -1000.0
    scaling = MinMax.fit(X, np.arange(101.0), "robust")
    low, high = np.percentile(X[:, 0], [1, 99])
    np.testing.assert_allclose(scaling.transform(np.array([[low, 0.0], [high, 5.0]])), [[0, 0], [1, 1]])
    assert squeezed_features(X) == [0] and squeezed_features(np.random.default_rng(0).random((50, 3))) == []


def test_robust_scaling_trains_on_values_float32_cannot_hold_after_a_plain_percentile_scaling():
    X, y = _outlier_data(1e40)  # within the app's limits; (x - p1) / (p99 - p1) would overflow float32
    tree = train(X, y, GETConfig(depth=2, n_starts=2, n_epochs=20, random_state=0, scaling="robust"))
    assert np.isfinite(tree.predict(X)).all() and tree.scaling == "robust"
    assert np.ptp(tree.scale_X(X)[:, 0]) <= 1e6 * (1 + 1e-9)



def test_weight_decay_zero_trains_the_same_tree_and_a_positive_decay_another():
    X, y, _ = planted_depth2(300, seed=0)
    config = GETConfig(depth=2, n_starts=2, n_epochs=60, random_state=0)
    plain = train(X, y, config)
    zero = train(X, y, replace(config, weight_decay=0.0))
    decayed = train(X, y, replace(config, weight_decay=0.5))
    assert np.array_equal(zero.weights, plain.weights) and np.array_equal(zero.thresholds, plain.thresholds)
    assert np.array_equal(zero.leaf_intercepts, plain.leaf_intercepts)
    assert not np.array_equal(decayed.weights, plain.weights)
    assert decayed.meta["config"]["weight_decay"] == 0.5


def test_a_budgeted_fit_records_its_cpu_share_and_whether_it_was_starved(monkeypatch):
    budgeted, fixed = GETConfig(depth=2, time_budget=1.0), GETConfig(depth=2, n_starts=2, n_epochs=10)
    clock = Clock().install(monkeypatch)
    with counting() as start:
        clock.now, clock.waited = clock.now + 10.0, 9.0  # its thread waited for a core 9 of 10 seconds
        assert cpu_record(start, 0.5, 10.0, budgeted) == {"cpu_share": pytest.approx(0.1), "starved": True}
        assert "starved" not in cpu_record(start, 0.5, 10.0, fixed)  # a fixed budget's work does not depend on it
        clock.now += 30.0
        assert cpu_record(start, 0.5, 40.0, budgeted)["starved"] is False  # 31 of 40 seconds on a core
    threads = torch.get_num_threads()  # where the machine does not say: CPU seconds over what its threads could use
    monkeypatch.setattr(budget.ThreadWaits, "open", classmethod(lambda cls: None))
    with counting() as blind:
        assert cpu_record(blind, 1.0, 10.0, budgeted) == {"cpu_share": pytest.approx(0.1 / threads), "starved": True}
    monkeypatch.undo()
    X = np.random.default_rng(1).random((300, 3))
    tree = train(X, X[:, 0] + X[:, 1], fixed)
    assert 0 < tree.meta["cpu_share"] <= 1.0 + 1e-9 and "starved" not in tree.meta


def test_the_summary_says_when_a_fit_was_starved_and_not_otherwise():
    X = np.random.default_rng(1).random((300, 3))
    tree = train(X, X[:, 0] + X[:, 1], GETConfig(depth=2, n_starts=2, n_epochs=10))
    assert not any("machine was busy" in s for s in summary.summarize(tree).sentences())
    tree.meta.update(cpu_share=0.12, starved=True)
    said = [s for s in summary.summarize(tree).sentences() if "machine was busy" in s]
    assert len(said) == 1 and "got 12% of the CPU" in said[0]
    tree.meta.update(cpu_share="lots")  # a model file's meta is the user's: read with care
    assert not any("machine was busy" in s for s in summary.summarize(tree).sentences())
