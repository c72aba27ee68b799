"""The GET optimizer: recovers planted oblique trees, never loses to its CART start, reports and cancels."""

import copy
import time
from dataclasses import replace

import numpy as np
import pytest
import torch
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from get_core import leaves
from get_core.data import squeezed_features
from get_core.optimize import GETConfig, MinMax, alpha_schedule, make_generator, train
from get_core.schedule import alpha_stage_bounds, stage_midpoints


def r2(y, pred):
    return 1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)


def planted_depth2(n, seed, noise=0.1):
    """Depth-2 oblique tree: root x0 + x1 <= 1, then x0 - x2 <= 0.2 | 0.5 x1 + x3 <= 0.8; leaves 0, 1, 2, 3."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    left = X[:, 0] + X[:, 1] <= 1
    leaf = np.where(left, np.where(X[:, 0] - X[:, 2] <= 0.2, 0, 1), np.where(0.5 * X[:, 1] + X[:, 3] <= 0.8, 2, 3))
    return X, leaf + rng.normal(scale=noise, size=n), leaf.astype(float)


def test_planted_depth2_oblique_tree_is_recovered_to_the_noise_ceiling_and_cart_is_clearly_worse():
    X, y, clean = planted_depth2(3000, seed=0)
    X_test, y_test, clean_test = planted_depth2(2000, seed=1)
    ceiling = r2(y_test, clean_test)  # the best any model can do on the test rows
    tree = train(X, y, GETConfig(depth=2, n_starts=4, n_epochs=1000, random_state=0))
    got = r2(y_test, tree.predict(X_test))
    cart = r2(y_test, DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y).predict(X_test))
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
def test_result_is_never_worse_than_the_cart_warm_start(leaf):
    rng = np.random.default_rng(3)
    X = rng.random((500, 5))
    y = np.sin(6 * X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=500)
    tree = train(X, y, GETConfig(depth=3, leaf=leaf, n_starts=2, n_epochs=2, random_state=0))
    cart = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    cart_r2 = r2(y, cart.predict(X))
    if leaf == "constant":
        assert tree.meta["train_r2"] >= cart_r2 - 1e-9
    else:  # linear leaves on CART's partition only add fit
        assert tree.meta["train_r2"] >= cart_r2


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
    assert warm.meta["train_r2"] >= r2(y, same_splits.predict(X)) - 1e-6
    np.testing.assert_array_equal(warm.apply(X), same_splits.apply(X))  # one epoch cannot beat it: kept as is
    with pytest.raises(ValueError, match="depth-2 tree"):
        train(X, y, GETConfig(depth=2, n_starts=1, n_epochs=1), warm_start=subset)


def test_progress_reports_every_start_with_rising_fraction_and_cancel_returns_the_best_so_far():
    X, y, _ = planted_depth2(2000, seed=4)
    events = []
    train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=100, random_state=0), on_progress=events.append)
    assert len(events) >= 2 * 20
    assert all(len(e.records) == 3 for e in events)
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    assert {e.stage for e in events} == {0, 1}
    assert all(e.best_hard_loss <= 0.5 for e in events) and events[-1].best_hard_r2 > 0.8

    calls = []

    def cancel_after_first(progress):
        calls.append(progress)
        return len(calls) >= 2

    start = time.perf_counter()
    tree = train(X, y, GETConfig(depth=6, n_starts=4, n_epochs=100000, random_state=0),
                 on_progress=cancel_after_first)
    assert time.perf_counter() - start < 30
    assert tree.meta["cancelled"] is True
    assert tree.predict(X).shape == (len(X),)


def test_same_seed_same_tree_and_different_seed_different_tree():
    X, y, _ = planted_depth2(600, seed=5)
    cfg = dict(depth=3, n_starts=3, n_epochs=40)
    a = train(X, y, GETConfig(random_state=1, **cfg))
    b = train(X, y, GETConfig(random_state=1, **cfg))
    c = train(X, y, GETConfig(random_state=2, **cfg))
    np.testing.assert_array_equal(a.weights, b.weights)
    assert not np.array_equal(a.weights, c.weights)


def test_two_stages_draw_the_papers_soft_then_sharp_alphas():
    """The paper's appendix B: a first alpha from [5, 25], a second from [50, 150], for the range [5, 150]."""
    alphas = alpha_schedule(500, GETConfig(n_alphas=2, alpha_range=(5, 150)), make_generator(0)).numpy()
    assert np.all((alphas[:, 0] >= 5) & (alphas[:, 0] <= 25))
    assert np.all((alphas[:, 1] >= 50) & (alphas[:, 1] <= 150))
    assert alphas[:, 0].std() > 3 and alphas[:, 1].std() > 15  # drawn, not fixed
    fixed = alpha_schedule(3, GETConfig(n_alphas=2, fixed_alpha=100.0), make_generator(0))
    assert torch.all(fixed == 100.0)


@pytest.mark.parametrize("alpha_range, n_alphas", [((5, 150), 1), ((5, 150), 4), ((50, 60), 3), ((1, 1000), 5)])
def test_stage_alphas_stay_in_range_and_ascend(alpha_range, n_alphas):
    bounds = alpha_stage_bounds(alpha_range, n_alphas)
    assert bounds.shape == (n_alphas, 2)
    assert np.all(np.diff(bounds, axis=0) >= 0)  # later stages are never softer
    alphas = alpha_schedule(200, GETConfig(n_alphas=n_alphas, alpha_range=alpha_range), make_generator(1)).numpy()
    assert np.all((alphas >= alpha_range[0]) & (alphas <= alpha_range[1]))
    assert np.all(np.diff(alphas, axis=1) >= 0)
    assert np.all((bounds[:, 0] <= stage_midpoints(alpha_range, n_alphas)) &
                  (stage_midpoints(alpha_range, n_alphas) <= bounds[:, 1]))


@pytest.mark.parametrize("bad, message", [
    (dict(depth=13), "depth must be an integer from 1 to 12; got 13$"), (dict(leaf="cubic"), "leaf must be"),
    (dict(n_starts=0), "n_starts must be an integer >= 1; got 0$"),
    (dict(alpha_range=(10, 5)),
     "alpha_range must be \\(min, max\\) with 0 < min <= max, both finite; got \\(10, 5\\)$"),
    (dict(alpha_range=(5, float("inf"))), "alpha_range must be .*both finite; got \\(5, inf\\)$"),
    (dict(alpha_range=("a", "b")), "alpha_range must be"), (dict(alpha_range=5), "alpha_range must be"),
    (dict(learning_rate=float("nan")), "learning_rate must be a finite number > 0; got nan$"),
    (dict(l1="0.1"), "l1 must be a finite number >= 0; got '0.1'$"),
    (dict(device="tpu"), "device must be 'auto', 'cpu' or 'cuda'; got 'tpu'$"),
    (dict(scaling="zscore"), "scaling must be 'minmax' or 'robust'; got 'zscore'$"),
])
def test_bad_configuration_is_refused_naming_the_parameter_and_its_value(bad, message):
    with pytest.raises(ValueError, match=message):
        train(np.random.rand(20, 2), np.random.rand(20), GETConfig(**bad))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown when CUDA is absent")
def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA"):
        train(np.random.rand(20, 2), np.random.rand(20), GETConfig(device="cuda", n_epochs=1))


def test_torch_path_gives_the_same_quality_as_the_native_kernel(monkeypatch):
    from get_core import native

    X, y, _ = planted_depth2(1500, seed=6)
    native_tree = train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=150, random_state=0))
    monkeypatch.setattr(native, "available", lambda *a: False)
    torch_tree = train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=150, random_state=0))
    assert torch_tree.meta["train_r2"] == pytest.approx(native_tree.meta["train_r2"], abs=0.01)


def test_the_native_kernel_leaves_the_process_arithmetic_alone():
    from get_core import native

    if native.load() is None:
        pytest.skip("the native kernel could not be built here")
    train(np.random.rand(300, 3), np.random.rand(300), GETConfig(depth=3, n_starts=2, n_epochs=5, random_state=0))
    tiny = np.array([1e-300]) * np.array([1e-20])  # a subnormal result: 0 under flush-to-zero
    assert tiny[0] > 0 and (np.array([1e-30], np.float32) * np.float32(1e-10))[0] > 0


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
