"""Counterfactuals on trees with logistic leaves (issue 52): within a leaf, "class k wins" is k's logit less each
other class's at least 0, linear in the row, so the search stays exact. Issue 49's guarantees hold there too:
answers on each feature's grid, inside their leaf and goal by a step, typed back they get the class, on leaves
with support; and they are as near as a reference that solves every leaf's program in original units."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from get_core import CounterfactualError, counterfactual
from get_core.model.counterfactual import _grid, _leaves_meeting
from get_core.model.tree import ObliqueTree
from tests.model.cf_reference import leaf_polytope
from tests.model.test_counterfactual import ATOL, RTOL, default_box, gets, snapped_bounds, typed_back
from tests.model.test_logistic_leaves_model import with_logits
from tests.trees import make_class_tree

exact = partial(counterfactual, resolution=0, min_support=0)


def logistic_tree(depth: int, p: int, n_classes: int, seed: int, modelled: float = 0.8):
    tree, X, _ = make_class_tree(depth=depth, p=p, n_classes=n_classes, seed=seed, n_rows=300)
    return with_logits(tree, seed, scale=5.0, modelled=modelled), X


def class_lines(tree: ObliqueTree, leaf: int, k: int, radius: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(A, b), A x <= b in original units: class k's logit at least each other's in ``leaf``, every row within
    ``radius`` of x too (none for a leaf without a model)."""
    i = leaf - tree.n_leaves
    W, b = tree.logit_coefs[i], tree.logit_intercepts[i]
    if not W.any():
        return np.zeros((0, tree.n_features)), np.zeros(0)
    rows, rhs = [], []
    for c in range(tree.n_classes):
        if c != k:
            w = (W[k] - W[c]) / tree.x_scale  # original units: d(x) = w·x + h
            h = b[k] - b[c] - w @ tree.x_min
            rows.append(-w)
            rhs.append(h - float(np.abs(w) @ radius))
    return np.array(rows), np.array(rhs)


def nearest(tree: ObliqueTree, x: np.ndarray, leaves: list[int], k: int, low: np.ndarray, high: np.ndarray,
            radius: np.ndarray) -> float:
    """The least L1 distance (cost 1 / span) from x to a row of one of ``leaves`` where class k wins, every row
    within ``radius`` of it too; each leaf its own linear program over (x', e), e >= |x' - x|."""
    p, costs, best = len(x), 1.0 / tree.x_scale, np.inf
    for leaf in leaves:
        A, b = leaf_polytope(tree, leaf, 0.0, 0.0, radius)
        C, d = class_lines(tree, leaf, k, radius)
        rows = [np.hstack([M, np.zeros((len(M), p))]) for M in (A, C) if len(M)]
        rhs = [v for v, M in ((b, A), (d, C)) if len(M)]
        for j in range(p):
            for sign in (1.0, -1.0):
                row = np.zeros(2 * p)
                row[j], row[p + j] = sign, -1.0
                rows.append(row[None])
                rhs.append(np.array([sign * x[j]]))
        result = linprog(np.concatenate([np.zeros(p), costs]), A_ub=np.vstack(rows), b_ub=np.concatenate(rhs),
                         bounds=[*zip(low, high), *[(0, None)] * p], method="highs")
        if result.status == 0:
            best = min(best, float(result.fun))
    return best


def test_a_class_that_only_a_logistic_model_gives_is_reached_inside_its_leaf():
    """Every leaf's shares favour 'class 0'; one leaf's model gives 'class 1' beyond a line: the answer crosses it."""
    tree, X = logistic_tree(depth=1, p=2, n_classes=2, seed=0, modelled=0.0)
    tree.logit_intercepts[:] = np.log([0.8, 0.2])
    tree.logit_coefs[1] = [[0.0, 0.0], [8.0, 0.0]]  # right leaf: class 1's logit rises with x0
    x = X[tree.apply(X) == 3][0]
    x[0] = tree.x_min[0] + 0.01 * tree.x_scale[0]
    if tree.apply(x[None])[0] != 3 or tree.predict(x[None])[0] == "class 1":
        pytest.skip("the row drawn is not in the right leaf with class 0")
    answer = counterfactual(tree, x, "class 1", min_support=0)
    assert answer.leaf == 3 and tree.predict(answer.x[None])[0] == "class 1"
    assert gets(tree, typed_back(answer, x, tree), "class 1")
    costs, low, high = default_box(tree, x)
    assert answer.distance == pytest.approx(exact(tree, x, "class 1").distance, abs=np.sum(costs * _grid(
        tree, None, None, [])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.integers(1, 3), p=st.integers(2, 4), n_classes=st.integers(2, 4),
       row=st.integers(0, 299), n=st.integers(1, 3), support=st.sampled_from([0, 10]), whole=st.booleans(),
       way=st.sampled_from([None, "increase", "decrease"]), data=st.data())
def test_answers_hold_typed_back_and_are_as_near_as_every_leafs_program_allows(seed, depth, p, n_classes, row, n,
                                                                                support, whole, way, data):
    tree, X = logistic_tree(depth, p, n_classes, seed)
    k = data.draw(st.integers(0, n_classes - 1))
    goal = tree.classes[k]
    x = X[row].copy()
    x[0] = np.round(x[0]) if whole else x[0]
    options = {"n": n, "min_support": support, "integers": ["x0"] if whole else [],
               "directions": {"x1": way} if way else {}}
    leaves = [tree.n_leaves + int(i) for i in np.flatnonzero(_leaves_meeting(tree, goal, None, support))]
    try:
        answers = counterfactual(tree, x, goal, **options)
    except CounterfactualError as exc:
        assert "No " in str(exc) or "Only leaves" in str(exc)
        answers = ()
    grid = _grid(tree, None, None, [0] if whole else [])
    for answer in answers:
        assert gets(tree, answer.x, goal) and tree.apply(answer.x[None])[0] == answer.leaf
        assert np.array_equal(typed_back(answer, x, tree), answer.x) and gets(tree, typed_back(answer, x, tree), goal)
        assert answer.leaf in leaves and (support == 0 or answer.support.rows >= support)
        if way:
            assert (answer.x[1] - x[1]) * (1 if way == "increase" else -1) >= 0
        rng = np.random.default_rng(seed)  # any row within half a step of it, in each feature, gets the class
        for _ in range(5):
            near = answer.x + rng.uniform(-0.499, 0.499, size=p) * np.where(np.arange(p) == 0, 0, grid)
            assert tree.apply(near[None])[0] == answer.leaf and gets(tree, near, goal)
    assert [a.distance for a in answers] == sorted(a.distance for a in answers)
    if whole or way or not leaves:
        return  # the reference solves the plain linear programs only
    low, high = snapped_bounds(tree, x, grid)
    full = nearest(tree, x, leaves, k, low, high, grid)
    slack = float(np.sum(grid / tree.x_scale) / 2) + ATOL
    if not answers:
        assert not np.isfinite(full)
        return
    assert answers[0].distance <= full + slack + RTOL * answers[0].distance  # the nearest, up to snapping
    for answer in answers:  # never nearer than its leaf allows with half the margin
        half = nearest(tree, x, [answer.leaf], k, low, high, grid / 2)
        assert half - ATOL - RTOL * answer.distance <= answer.distance


def test_exact_answers_match_the_reference_without_a_grid():
    for seed in range(6):
        tree, X = logistic_tree(depth=2, p=3, n_classes=3, seed=seed)
        x = X[seed]
        costs, low, high = default_box(tree, x)
        for k, label in enumerate(tree.classes):
            leaves = [tree.n_leaves + int(i) for i in np.flatnonzero(_leaves_meeting(tree, label, None))]
            expected = nearest(tree, x, leaves, k, low, high, np.zeros(3))
            if not np.isfinite(expected):
                with pytest.raises(CounterfactualError):
                    exact(tree, x, label)
                continue
            result = exact(tree, x, label)
            assert tree.predict(result.x[None])[0] == label == result.prediction
            assert result.distance == pytest.approx(expected, rel=RTOL, abs=ATOL)
