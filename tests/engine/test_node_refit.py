"""TAO-style node refits (``get_core.engine.node_refit``): the hard training loss never rises, a planted axis-aligned step
is found from a wrong split, and no split ever gets more than k features."""

import copy

import numpy as np
import pytest
import torch

from get_core.config import GETConfig
from get_core.engine import node_refit
from get_core.engine.node_refit import refit_nodes
from get_core.engine.soft import Params
from get_core.engine.train import MinMax, tree_from_params
from tests.clock import Clock


def tree_with_splits(X, y, weights, thresholds, leaf="constant"):
    """An ObliqueTree with these splits (in [0, 1] scaled units) and its leaves fitted on X, y."""
    scaling = MinMax.fit(X, y)
    _, ys = scaling.transform(X, y)
    depth = int(np.log2(len(weights) + 1))
    params = Params(torch.as_tensor(np.asarray(weights)[None], dtype=torch.float32),
                    torch.as_tensor(np.asarray(thresholds)[None], dtype=torch.float32), None, None)
    return tree_from_params(params, scaling, None, GETConfig(depth=depth, leaf=leaf), X, ys), ys


def sparse_splits(rng, n_branches: int, p: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    weights = np.zeros((n_branches, p))
    for row in weights:
        row[rng.choice(p, size=k, replace=False)] = rng.normal(size=k)
    return weights, rng.uniform(-0.5, 0.5, size=n_branches)


def mse(tree, X, ys) -> float:
    return float(np.mean((tree.predict_scaled(X) - ys) ** 2))


@pytest.mark.parametrize("seed", range(6))
def test_a_refit_never_raises_the_hard_training_loss_and_keeps_every_split_within_k(seed):
    rng = np.random.default_rng(seed)
    k, depth, p = 1 + seed % 3, 2 + seed % 3, 6
    X = rng.normal(size=(300, p))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=300)
    tree, ys = tree_with_splits(X, y, *sparse_splits(rng, 2 ** depth - 1, p, k),
                                leaf="linear" if seed % 2 else "constant")
    before = mse(tree, X, ys)
    refitted = refit_nodes(copy.deepcopy(tree), X, ys, k)
    assert mse(refitted, X, ys) <= before
    assert refitted.split_widths.max() <= k
    assert not np.signbit(refitted.weights[refitted.weights == 0]).any()
    assert refitted.meta["node_refit_accepted"] > 0  # random splits leave room: the test exercises a change


def test_one_feature_per_split_moves_a_wrong_root_onto_the_planted_step():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(400, 5))
    y = np.where(X[:, 2] > 0.3, 5.0, 1.0) + 0.01 * rng.normal(size=400)
    wrong = np.zeros((1, 5))
    wrong[0, 4] = 1.0  # the root splits on an unrelated feature
    tree, ys = tree_with_splits(X, y, wrong, [0.5])
    refitted = refit_nodes(tree, X, ys, 1)
    assert np.flatnonzero(refitted.weights[0]).tolist() == [2]
    a, c = refitted.split_in_original_units(1)
    assert c / a[2] == pytest.approx(0.3, abs=0.01)
    assert refitted.meta["node_refit_accepted"] >= 1
    assert mse(refitted, X, ys) < 1e-3


def test_a_tree_already_at_its_best_split_is_left_alone():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(200, 3))
    y = np.where(X[:, 0] > 0.5, 1.0, 0.0)
    right = np.array([[1.0, 0.0, 0.0]])
    tree, ys = tree_with_splits(X, y, right, [0.5])
    before = tree.weights.copy(), tree.thresholds.copy()
    refitted = refit_nodes(tree, X, ys, 1)
    assert refitted.meta["node_refit_accepted"] == 0
    np.testing.assert_array_equal(refitted.weights, before[0])
    np.testing.assert_array_equal(refitted.thresholds, before[1])


@pytest.mark.parametrize("seed", range(4))
def test_a_dense_refit_never_raises_the_loss_of_a_random_oblique_tree(seed):
    rng = np.random.default_rng(10 + seed)
    depth, p = 2 + seed % 2, 5
    X = rng.normal(size=(400, p))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=400)
    tree, ys = tree_with_splits(X, y, rng.normal(size=(2 ** depth - 1, p)), rng.uniform(-0.5, 0.5, 2 ** depth - 1),
                                leaf="linear" if seed % 2 else "constant")
    before = mse(tree, X, ys)
    refitted = refit_nodes(copy.deepcopy(tree), X, ys, p, passes=8)
    assert mse(refitted, X, ys) <= before and refitted.meta["node_refit_accepted"] > 0


def test_a_dense_refit_turns_a_wrong_root_towards_the_planted_hyperplane():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(800, 4))
    planted = np.array([1.0, -1.0, 0.5, 0.0])
    y = np.where(X @ planted > 0.25, 3.0, 0.0) + 0.05 * rng.normal(size=800)
    tree, ys = tree_with_splits(X, y, [[1.0, 0.0, 0.0, 0.0]], [0.5])  # axis-aligned: no single feature separates
    before = mse(tree, X, ys)
    refitted = refit_nodes(tree, X, ys, 4, passes=8)
    a, _ = refitted.split_in_original_units(1)
    assert abs(a @ planted) / (np.linalg.norm(a) * np.linalg.norm(planted)) > 0.95
    assert mse(refitted, X, ys) < before / 4


def test_no_refit_pass_starts_past_its_deadline_and_none_once_the_budget_is_spent(monkeypatch):
    """After its deadline no pass starts but the first; once the fit's budget is spent (``first_by``) not even that
    (one at depth 9 on 25,000 rows of 100 inputs took 11.6 s of a 1.1-s search fit); a pass that starts in time runs
    to its end."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 5))
    y = X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=400)
    tree, ys = tree_with_splits(X, y, rng.normal(size=(7, 5)), np.zeros(7))
    free = refit_nodes(copy.deepcopy(tree), X, ys, 5, passes=8)
    assert free.meta["node_refit_passes"] > 1  # the first pass changed something: without a deadline a second runs
    late = refit_nodes(copy.deepcopy(tree), X, ys, 5, passes=8, deadline=0.0)  # long past: the first pass runs
    assert late.meta["node_refit_passes"] == 1 and mse(late, X, ys) < mse(tree, X, ys)
    spent = refit_nodes(copy.deepcopy(tree), X, ys, 5, passes=8, deadline=0.0, first_by=0.0)  # the budget spent
    assert spent.meta["node_refit_passes"] == 0 and mse(spent, X, ys) == mse(tree, X, ys)
    clock = Clock().install(monkeypatch)  # a pass takes 10 s on this clock: the deadline falls in the first
    levels = node_refit._refit_level

    def slow_level(*args, **kwargs):
        clock.now += 10.0 / 3  # a depth-3 tree: three levels a pass
        return levels(*args, **kwargs)

    monkeypatch.setattr(node_refit, "_refit_level", slow_level)
    one = refit_nodes(copy.deepcopy(tree), X, ys, 5, passes=8, deadline=Clock.START + 5.0)
    assert one.meta["node_refit_passes"] == 1 and mse(one, X, ys) < mse(tree, X, ys)


@pytest.mark.parametrize("k, leaf", [(2, "constant"), (6, "linear")])
def test_a_refit_on_rows_scaled_once_writes_the_same_tree_as_one_on_the_original_rows(k, leaf):
    """The trainer hands the refit its scaled rows (``scaled=True``): every routing inside then reuses them, and the
    splits and leaves it writes must be the very ones a refit from the original rows writes."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(2000, 6)) * [1, 10, 100, 1, 1, 1e-3]
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] / 1e3 + 0.1 * rng.normal(size=2000)
    tree, ys = tree_with_splits(X, y, *sparse_splits(rng, 7, 6, min(k, 3)), leaf=leaf)
    from_original = refit_nodes(copy.deepcopy(tree), X, ys, k, passes=3)
    from_scaled = refit_nodes(copy.deepcopy(tree), tree.scale_X(X), ys, k, passes=3, scaled=True)
    assert from_original.meta["node_refit_accepted"] > 0
    for name in ("weights", "thresholds", "leaf_intercepts", "leaf_coefs", "n_samples", "node_values"):
        np.testing.assert_array_equal(getattr(from_scaled, name), getattr(from_original, name))
