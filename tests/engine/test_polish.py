"""Subtree polish and depth selection (paper section 4.3; protocol of its section 5)."""

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from get_core import GETRegressor, GETRegressorCV
from get_core.config import GETConfig
from get_core.engine.polish import level_seconds, polished_levels, subtree_nodes
from get_core.engine.train import train
from tests.engine.cpu_clock import use_ticking_clock
from tests.planted import planted_depth2


def test_subtree_nodes_follow_heap_order_below_the_root():
    np.testing.assert_array_equal(subtree_nodes(1, 2), [1, 2, 3])
    np.testing.assert_array_equal(subtree_nodes(3, 3), [3, 6, 7, 12, 13, 14, 15])


def test_a_budgeted_polish_skips_the_root_and_gives_deeper_levels_less_time():
    assert list(polished_levels(4, budgeted=False)) == [0, 1, 2, 3]  # the paper's Algorithm 2
    assert list(polished_levels(4, budgeted=True)) == [1, 2, 3]
    left, shares = 14.0, []
    for level in polished_levels(4, budgeted=True):  # each level spends exactly its share
        shares.append(level_seconds(left, 4, level))
        left -= shares[-1]
    assert shares == pytest.approx([8.0, 4.0, 2.0]) and left == pytest.approx(0.0)
    assert level_seconds(-1.0, 4, 2) == 0.0  # past the budget's end


def test_a_budgeted_fit_polishes_by_default_but_never_its_root(monkeypatch):
    use_ticking_clock(monkeypatch, 0.01)  # what the budget buys is the code's, not the machine's speed or load
    X, y, _ = planted_depth2(1500, seed=3)
    tree = train(X, y, GETConfig(depth=3, time_budget=2.0, random_state=0))
    assert 1 <= tree.meta["polish_nodes_visited"] <= 2 + 4  # the two subtrees of level 1, the four of level 2
    fixed = train(X, y, GETConfig(depth=3, n_starts=2, n_epochs=30, random_state=0))
    assert "polish_nodes_visited" not in fixed.meta  # "auto" keeps the paper's GET without a budget


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_polish_never_makes_the_training_loss_worse(leaf):
    rng = np.random.default_rng(0)
    X = rng.random((800, 4))
    y = np.sin(5 * X[:, 0]) * X[:, 1] + np.abs(X[:, 2] - X[:, 3]) + rng.normal(scale=0.05, size=800)
    cfg = dict(depth=3, leaf=leaf, n_starts=3, n_epochs=60, random_state=0)
    plain = train(X, y, GETConfig(**cfg))
    events = []
    polished = train(X, y, GETConfig(polish=True, **cfg), on_progress=events.append)
    assert polished.meta["train_mse_scaled"] <= plain.meta["train_mse_scaled"] + 1e-12
    assert polished.meta["polish_nodes_visited"] >= 1
    assert {"optimize", "polish"} <= {e.phase for e in events}


def test_depth_cv_picks_a_deeper_tree_when_the_data_need_one_and_stops_early():
    rng = np.random.default_rng(1)
    X = rng.random((1200, 3))
    cells = (X[:, 0] > 0.5).astype(int) * 4 + (X[:, 1] > 0.5) * 2 + (X[:, 0] + X[:, 2] > 1)
    y = np.array([0, 3, 1, 4, 2, 5, 7, 6])[cells] + rng.normal(scale=0.1, size=len(X))
    deep = GETRegressorCV(depths=range(1, 13), n_starts=2, n_epochs=80, random_state=0).fit(X, y)
    assert deep.best_depth_ >= 3
    assert len(deep.cv_results_) < 12

    step = (X[:, 0] > 0.5) + rng.normal(scale=0.1, size=len(X))
    shallow = GETRegressorCV(depths=range(1, 13), n_starts=2, n_epochs=80, random_state=0).fit(X, step)
    assert shallow.best_depth_ <= 2
    assert len(shallow.cv_results_) <= shallow.best_depth_ + shallow.patience


def test_refit_from_search_starts_the_refit_from_the_validated_tree():
    rng = np.random.default_rng(2)
    X = rng.random((600, 3)) * [1, 20, 5]
    y = np.sin(4 * X[:, 0]) + (X[:, 1] > 10) + rng.normal(scale=0.1, size=len(X))
    common = dict(depths=[2, 3], n_starts=1, n_epochs=1, random_state=0, patience=5)  # one start, no real training
    search = GETRegressorCV(refit_from_search=True, **common).fit(X, y)

    X_tr, _, y_tr, _ = train_test_split(X, y, test_size=search.validation_fraction, random_state=0)
    validated = train(X_tr, y_tr, search._config(depth=search.best_depth_, random_state=0))
    np.testing.assert_array_equal(search.tree_.apply(X), validated.apply(X))  # the refit kept the validated splits
    fresh = GETRegressorCV(**common).fit(X, y)  # default: the paper's refit from fresh starts
    assert fresh.best_depth_ == search.best_depth_
    assert not np.array_equal(fresh.tree_.apply(X), validated.apply(X))


def test_depth_cv_chooses_the_l1_strength_with_the_depth():
    rng = np.random.default_rng(3)
    X = rng.random((500, 3))
    y = np.where(X[:, 0] + X[:, 1] > 1, 2 * X[:, 2], -X[:, 2]) + rng.normal(scale=0.05, size=len(X))
    common = dict(leaf="linear", n_starts=1, n_epochs=30, random_state=0)
    cv = GETRegressorCV(depths=[1, 2], l1=[0.1, 0.0, 1e-5], patience=5, tol=0.0, **common).fit(X, y)
    assert [(r["depth"], r["l1"]) for r in cv.cv_results_] == [(d, v) for d in (1, 2) for v in (0.0, 1e-5, 0.1)]
    assert len({r["validation_r2"] for r in cv.cv_results_ if r["depth"] == 2}) > 1  # the penalty changes the fit
    best = max(cv.cv_results_, key=lambda r: r["validation_r2"])
    assert (cv.best_depth_, cv.best_l1_) == (best["depth"], best["l1"])
    refit = GETRegressor(depth=cv.best_depth_, l1=cv.best_l1_, **common).fit(X, y)  # the refit uses the chosen pair
    np.testing.assert_allclose(cv.predict(X), refit.predict(X))


@pytest.mark.parametrize("l1", [[], [0.0, -1.0], [np.inf]])
def test_depth_cv_refuses_bad_l1_values(l1):
    with pytest.raises(ValueError, match="l1"):
        GETRegressorCV(depths=[1], l1=l1, n_starts=1, n_epochs=1).fit(np.random.default_rng(0).random((60, 2)),
                                                                      np.arange(60.0))
