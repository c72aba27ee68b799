"""Counterfactuals: answers meet the goal by predict, respect locks, bounds and the cap, switch categories whole,
and are as near as a reference that solves every leaf on its own (tests/model/cf_reference.py)."""

from __future__ import annotations

import subprocess
import sys
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from get_core import CounterfactualError, counterfactual
from get_core.data.columns import DataError
from get_core.data.encoding import Encoding
from get_core.model import model_file
from get_core.model.counterfactual import _grid, _leaves_meeting, _space
from get_core.model.counterfactual_programs import grid_above
from get_core.model.tree import ObliqueTree
from tests import trees
from get_core.views import what_if
from bench.studies.counterfactual import routed_tree
from tests.model.cf_reference import brute_force, nearest_in_leaf

RTOL, ATOL = 1e-5, 1e-7  # the answer keeps a margin of ~1e-9 from every split; HiGHS solves to ~1e-9
#: Without a grid and on every leaf, the nearest row a hair inside its leaf: what the reference solves.
exact = partial(counterfactual, resolution=0, min_support=0)


def default_box(tree: ObliqueTree, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(costs, low, high) as the module documents its defaults: 1 / training span, the span widened to hold x."""
    return 1.0 / tree.x_scale, np.minimum(tree.x_min, x), np.maximum(tree.x_min + tree.x_scale, x)


def goal_leaves(tree: ObliqueTree, goal) -> list[int]:
    return [tree.n_leaves + int(i) for i in np.flatnonzero(_leaves_meeting(tree, goal, None))]


def reference(tree, x, goal, margin=1e-9, inside=0.0, **options) -> float:
    costs, low, high = default_box(tree, x)
    return brute_force(tree, x, goal_leaves(tree, goal), costs, low, high, locked=options.get("locked", ()),
                       max_changes=options.get("max_changes"), goal=goal if tree.leaf_type == "linear" else None,
                       norm=options.get("norm", "l1"), margin=margin, inside=inside)


def meets(tree: ObliqueTree, x: np.ndarray, goal) -> bool:
    value = tree.predict(x[None])[0]
    low, high = goal
    return (low is None or value >= low) and (high is None or value <= high)


def upper_goal(tree: ObliqueTree, X: np.ndarray, quantile: float) -> tuple[float, None]:
    return float(np.quantile(tree.predict(X), quantile)), None


# ---------------------------------------------------------------------------------------------- regression
@pytest.mark.parametrize("leaf", ["constant", "linear"])
@pytest.mark.parametrize("options", [{}, {"norm": "linf"}, {"max_changes": 1}, {"locked": [0]},
                                     {"max_changes": 2, "norm": "linf", "locked": [1]}])
def test_the_answer_meets_the_goal_and_is_as_near_as_the_reference(leaf, options):
    for seed in range(6):
        tree, X, _ = trees.make_tree(depth=3, p=3, leaf=leaf, seed=seed)
        x, goal = X[seed], upper_goal(tree, X, 0.85)
        expected = reference(tree, x, goal, **options)
        if not np.isfinite(expected):
            with pytest.raises(CounterfactualError, match="No change to this row gives a prediction of at least"):
                exact(tree, x, goal, **options)
            continue
        result = exact(tree, x, goal, **options)
        assert meets(tree, result.x, goal)
        assert tree.apply(result.x[None])[0] == result.leaf
        assert result.prediction == tree.predict(result.x[None])[0]
        assert result.distance == pytest.approx(expected, rel=RTOL, abs=ATOL)


def test_a_row_that_already_meets_the_goal_stays_as_it_is():
    tree, X, _ = trees.make_tree(depth=3, p=4, seed=3)
    x = X[0]
    value = tree.predict(x[None])[0]
    result = exact(tree, x, (value - 1, value + 1))
    assert result.distance == 0 and result.changes == () and np.array_equal(result.x, x)


def test_a_range_goal_on_a_linear_tree_lands_inside_it_from_either_side():
    tree, X, _ = trees.make_tree(depth=2, p=3, leaf="linear", seed=4)
    predictions = tree.predict(X)
    low, high = np.quantile(predictions, [0.45, 0.55])
    for x in X[:10]:
        result = exact(tree, x, (low, high))
        assert low <= result.prediction <= high
        assert result.distance == pytest.approx(reference(tree, x, (low, high)), rel=RTOL, abs=ATOL)


def test_locked_features_and_bounds_are_respected():
    tree, X, _ = trees.make_tree(depth=3, p=4, seed=5)
    x, goal = X[1], upper_goal(tree, X, 0.9)
    free = exact(tree, x, goal)
    moved = [c.feature for c in free.changes]
    name = moved[0]
    j = tree.feature_names.index(name)
    limit = (x[j] - 0.01, x[j] + 0.01)
    for options in ({"locked": [name]}, {"bounds": {name: limit}}):
        try:
            result = exact(tree, x, goal, **options)
        except CounterfactualError:
            continue
        if "locked" in options:
            assert result.x[j] == x[j] and name not in [c.feature for c in result.changes]
        else:
            assert limit[0] <= result.x[j] <= limit[1]
        assert meets(tree, result.x, goal) and result.distance >= free.distance - ATOL


def test_default_bounds_are_the_training_span_and_a_bound_that_excludes_x_moves_it():
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=6)
    x = X[2]
    value = tree.predict(x[None])[0]
    result = exact(tree, x, (value - 1e-9, value + 1e-9), bounds={"x0": (x[0] + 1.0, None)})
    assert result.x[0] >= x[0] + 1.0 - 1e-12
    for lower, upper, v in zip(tree.x_min, tree.x_min + tree.x_scale, counterfactual(
            tree, x, upper_goal(tree, X, 0.95)).x):
        assert lower - 1e-9 <= v <= upper + 1e-9


def test_the_cap_limits_how_many_features_change():
    tree, X, _ = trees.make_tree(depth=3, p=4, seed=7)
    for x in X[:8]:
        goal = upper_goal(tree, X, 0.9)
        try:
            result = exact(tree, x, goal, max_changes=1)
        except CounterfactualError:
            continue
        assert len(result.changes) <= 1 and np.count_nonzero(result.x != x) <= 1


def test_changes_list_the_moves_the_dearest_first():
    tree, X, _ = trees.make_tree(depth=3, p=4, seed=8, names=["temp", "vacuum", "pressure", "humidity"])
    x, goal = X[0], upper_goal(tree, X, 0.95)
    result = exact(tree, x, goal)
    assert {c.feature for c in result.changes} == {tree.feature_names[j] for j in np.flatnonzero(result.x != x)}
    for c in result.changes:
        j = tree.feature_names.index(c.feature)
        assert (c.now, c.needed, c.change) == (x[j], result.x[j], result.x[j] - x[j])
    weighted = [abs(c.change) / tree.x_scale[tree.feature_names.index(c.feature)] for c in result.changes]
    assert weighted == sorted(weighted, reverse=True)
    assert result.distance == pytest.approx(sum(weighted))


def test_costs_and_reference_rows_change_what_is_cheapest():
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=9)
    x, goal = X[3], upper_goal(tree, X, 0.9)
    plain = exact(tree, x, goal)
    dearest = plain.changes[0].feature
    j = tree.feature_names.index(dearest)
    pricey = exact(tree, x, goal, costs={dearest: 1e3})
    assert abs(pricey.x[j] - x[j]) <= abs(plain.x[j] - x[j]) + 1e-9
    costs = 1.0 / tree.x_scale
    costs[j] = 1e3
    assert pricey.distance == pytest.approx(float(np.sum(costs * np.abs(pricey.x - x))))
    by_std = exact(tree, x, goal, reference=X)
    std = X.std(axis=0)
    assert by_std.distance == pytest.approx(float(np.sum(np.abs(by_std.x - x) / std)))


def test_a_leaf_can_be_the_goal():
    tree, X, _ = trees.make_tree(depth=3, p=3, seed=10)
    x = X[0]
    for leaf in range(tree.n_leaves, 2 * tree.n_leaves):
        costs, low, high = default_box(tree, x)
        expected = nearest_in_leaf(tree, x, leaf, costs, low, high, np.ones(3, dtype=bool))
        if not np.isfinite(expected):
            with pytest.raises(CounterfactualError, match=f"No change to this row gives a way into leaf {leaf}"):
                exact(tree, x, leaf=leaf)
            continue
        result = exact(tree, x, leaf=leaf)
        assert result.leaf == leaf == tree.apply(result.x[None])[0]
        assert result.distance == pytest.approx(expected, rel=RTOL, abs=ATOL)


def test_an_estimator_is_taken_for_its_tree():
    from get_core import GETRegressor  # loads torch: only this test needs it

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = X[:, 0] * 2 + X[:, 1]
    model = GETRegressor(depth=2, n_starts=1, n_epochs=20, polish=False, random_state=0).fit(X, y)
    goal = (float(np.quantile(model.predict(X), 0.9)), None)
    result = exact(model, X[0], goal)
    assert model.predict(result.x[None])[0] >= goal[0]
    with pytest.raises(CounterfactualError, match="not fitted yet"):
        exact(GETRegressor(), X[0], goal)


def test_the_package_name_is_the_function_whichever_import_comes_first():
    code = ("import get_core.model.counterfactual\nfrom get_core import counterfactual\n"
            "assert callable(counterfactual) and counterfactual.__name__ == 'counterfactual', counterfactual")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ---------------------------------------------------------------------------------------------- refusals
def test_goals_no_leaf_can_meet_are_refused_with_the_nearest_leaves():
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=11)
    values = np.sort(np.unique(tree.predict(X)))
    between = (values[0] + values[1]) / 2
    with pytest.raises(CounterfactualError, match=r"No leaf of this tree gives a prediction between .* the nearest "
                                                  r"leaves predict"):
        exact(tree, X[0], (between - 1e-6, between + 1e-6))
    with pytest.raises(CounterfactualError, match="No leaf of this tree gives a prediction of at least"):
        exact(tree, X[0], (values[-1] + 1, None))


def test_constraints_that_block_every_leaf_are_refused_in_a_sentence():
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=12)
    goal = upper_goal(tree, X, 0.99)
    x = next(row for row in X if not meets(tree, row, goal))
    with pytest.raises(CounterfactualError, match=r"No change to this row gives a prediction of at least .* within "
                                                  r"the bounds with 3 inputs locked: unlock features or widen"):
        exact(tree, x, goal, locked=["x0", "x1", "x2"])
    assert issubclass(CounterfactualError, DataError)


@pytest.mark.parametrize("call, message", [
    (lambda t, x: exact(t, x[:2], (0, None)), "x must be one row of 3 numbers"),
    (lambda t, x: exact(t, np.array([np.nan, 1, 2]), (0, None)), "no usable value for feature 'x0'"),
    (lambda t, x: exact(t, x, 5.0), "A regression goal is a range"),
    (lambda t, x: exact(t, x, (3, 1)), r"The goal.s low end \(3\) is above its high end \(1\).*swap them"),
    (lambda t, x: exact(t, x, (None, None)), "at least one end"),
    (lambda t, x: exact(t, x, None), "Say what the prediction should be"),
    (lambda t, x: exact(t, x, (0, None), locked=["speed"]), "locked: 'speed' is not a feature"),
    (lambda t, x: exact(t, x, (0, None), locked=[7]), "feature index 7 is out of range"),
    (lambda t, x: exact(t, x, (0, None), bounds={"x0": (2, 1)}), r"bounds\['x0'\] must be finite"),
    (lambda t, x: exact(t, x, (0, None), bounds={"x0": 3}), r"bounds\['x0'\] must be a pair"),
    (lambda t, x: exact(t, x, (0, None), locked=["x0"], bounds={"x0": (x[0] + 1, None)}),
     "locked at .* outside its bounds"),
    (lambda t, x: exact(t, x, (0, None), max_changes=0), "max_changes must be a whole number"),
    (lambda t, x: exact(t, x, (0, None), costs={"x1": -1}), r"costs\['x1'\] must be a finite number"),
    (lambda t, x: exact(t, x, (0, None), costs=[1, 2]), "costs must be a mapping"),
    (lambda t, x: exact(t, x, (0, None), norm="l2"), "norm must be one of"),
    (lambda t, x: exact(t, x, leaf=2), "leaf must be a leaf's node number, 4 to 7"),
    (lambda t, x: exact("tree", x, (0, None)), "model must be an ObliqueTree"),
])
def test_malformed_requests_are_refused_by_name(call, message):
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=13)
    with pytest.raises(CounterfactualError, match=message):
        call(tree, X[0])


# ---------------------------------------------------------------------------------------------- categories
def categorical_tree(seed: int) -> tuple[ObliqueTree, Encoding, np.ndarray]:
    """Depth 3 over two numeric inputs and one-hot 'color' (blue, green, red), with rows of each level."""
    levels = ("blue", "green", "red")
    names = ["a", "b", *(f"color={level}" for level in levels)]
    tree, X, _ = trees.make_tree(depth=3, p=5, seed=seed, names=names)
    rng = np.random.default_rng(seed)
    X[:, 2:] = np.eye(3)[rng.integers(3, size=len(X))]
    tree.x_min[2:], tree.x_scale[2:] = 0.0, 1.0
    tree.weights[:, 2:] *= 3.0  # categories matter to the splits
    encoding = Encoding(target="y", numeric=("a", "b"), categories={"color": levels}, impute={},
                        feature_names=tuple(names), columns=("a", "b", "color"))
    return tree, encoding, X


def categorical_reference(tree: ObliqueTree, x: np.ndarray, goal, max_changes=None) -> float:
    """Every level of 'color' in turn (a switch costs 1), the numeric inputs by the reference's programs."""
    best = np.inf
    for level in range(3):
        row = x.copy()
        row[2:] = np.eye(3)[level]
        switch = float(not np.array_equal(row[2:], x[2:]))
        if max_changes is not None and switch > max_changes:
            continue
        costs, low, high = default_box(tree, row)
        movable = np.array([True, True, False, False, False])
        cap = None if max_changes is None else max_changes - int(switch)
        if cap == 0:
            movable[:] = False
        found = min(nearest_in_leaf(tree, row, leaf, costs, low, high, movable) for leaf in goal_leaves(tree, goal))
        if cap == 1:
            found = min(nearest_in_leaf(tree, row, leaf, costs, low, high, np.arange(5) == j)
                        for leaf in goal_leaves(tree, goal) for j in (0, 1))
        best = min(best, switch + found)
    return best


@pytest.mark.parametrize("max_changes", [None, 1])
def test_a_categorical_column_switches_whole_and_costs_one(max_changes):
    checked = 0
    for seed in range(8):
        tree, encoding, X = categorical_tree(seed)
        x, goal = X[0], upper_goal(tree, X, 0.8)
        expected = categorical_reference(tree, x, goal, max_changes)
        if not np.isfinite(expected):
            continue
        result = exact(tree, x, goal, encoding=encoding, max_changes=max_changes)
        indicators = result.x[2:]
        assert set(indicators.tolist()) <= {0.0, 1.0} and indicators.sum() == 1
        assert meets(tree, result.x, goal)
        assert result.distance == pytest.approx(expected, rel=RTOL, abs=ATOL)
        switched = [c for c in result.changes if c.feature == "color"]
        if not np.array_equal(indicators, x[2:]):
            (change,) = switched
            assert change.change is None and change.now == encoding.categories["color"][int(np.argmax(x[2:]))]
            assert change.needed == encoding.categories["color"][int(np.argmax(indicators))]
            checked += 1
    assert checked  # some answer switched the category


def test_the_encoding_saved_with_a_model_file_is_used_and_a_column_locks_whole():
    tree, encoding, X = categorical_tree(2)
    loaded = model_file.load_model_json(model_file.model_json(tree, encoding=encoding))
    x, goal = X[0], upper_goal(tree, X, 0.8)
    result = exact(loaded, x, goal)
    assert set(result.x[2:].tolist()) <= {0.0, 1.0} and result.x[2:].sum() == 1
    kept = 0
    for row in X[:20]:
        try:
            locked = exact(loaded, row, goal, locked=["color"])
        except CounterfactualError:
            continue
        assert np.array_equal(locked.x[2:], row[2:]) and meets(tree, locked.x, goal)
        kept += 1
    assert kept
    with pytest.raises(CounterfactualError, match="'color' is a categorical column"):
        exact(loaded, x, goal, bounds={"color": (0, 1)})
    with pytest.raises(CounterfactualError, match="one-hot encoded, so its inputs must be 0 or 1"):
        exact(loaded, np.array([x[0], x[1], 0.5, 0.5, 0.0]), goal)


# ---------------------------------------------------------------------------------------------- classes
def test_a_classifier_reaches_the_class_asked_for():
    make_class_tree = getattr(trees, "make_class_tree", None)
    if make_class_tree is None or not hasattr(ObliqueTree, "is_classifier"):
        pytest.skip("classification trees are not in this checkout yet (ObliqueTree.is_classifier)")
    for seed in range(4):
        tree, X, _ = make_class_tree(depth=3, p=3, n_classes=3, seed=seed)
        x = X[0]
        for k, label in enumerate(tree.classes):
            leaves = [tree.n_leaves + int(i) for i in np.flatnonzero(tree.leaf_class_index == k)]
            costs, low, high = default_box(tree, x)
            expected = brute_force(tree, x, leaves, costs, low, high)
            if not np.isfinite(expected):
                with pytest.raises(CounterfactualError):
                    exact(tree, x, label)
                continue
            result = exact(tree, x, label)
            assert tree.predict(result.x[None])[0] == label == result.prediction
            assert result.distance == pytest.approx(expected, rel=RTOL, abs=ATOL)
    with pytest.raises(CounterfactualError, match="is not a class of this model"):
        exact(tree, x, "no such class")


# ---------------------------------------------------------------------------------------------- properties
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.integers(1, 3), p=st.integers(1, 4),
       leaf=st.sampled_from(["constant", "linear"]), quantile=st.floats(0.0, 1.0), row=st.integers(0, 199),
       side=st.sampled_from(["above", "below", "band"]), norm=st.sampled_from(["l1", "linf"]),
       n_locked=st.integers(0, 2), cap=st.sampled_from([None, 1, 2]))
def test_answers_are_confirmed_by_predict_and_minimal_on_random_trees(seed, depth, p, leaf, quantile, row, side,
                                                                     norm, n_locked, cap):
    tree, X, _ = trees.make_tree(depth=depth, p=p, leaf=leaf, seed=seed)
    x = X[row]
    q = float(np.quantile(tree.predict(X), quantile))
    goal = {"above": (q, None), "below": (None, q), "band": (q - 0.5, q + 0.5)}[side]
    locked = list(range(min(n_locked, p - 1)))
    options = {"norm": norm, "locked": locked, "max_changes": cap}
    if not goal_leaves(tree, goal):
        with pytest.raises(CounterfactualError, match="No leaf of this tree gives"):
            exact(tree, x, goal, **options)
        return
    # The nearest answer lies between the infimum (the leaves closed) and the nearest point at least 1e-6 inside a
    # leaf (wider than the answer's margin): a leaf thinner than that (splits that meet up to rounding, e.g. two
    # medians of one feature) may hold an answer or not.
    infimum = reference(tree, x, goal, margin=0.0, **options)
    reachable = reference(tree, x, goal, margin=1e-6, inside=1e-6, **options)
    if not np.isfinite(infimum):
        with pytest.raises(CounterfactualError, match="No change to this row gives"):
            exact(tree, x, goal, **options)
        return
    try:
        result = exact(tree, x, goal, **options)
    except CounterfactualError:
        assert not np.isfinite(reachable)
        return
    assert meets(tree, result.x, goal) and tree.apply(result.x[None])[0] == result.leaf
    assert np.array_equal(result.x[locked], x[locked])
    assert cap is None or len(result.changes) <= cap
    _, low, high = default_box(tree, x)
    assert np.all(result.x >= low) and np.all(result.x <= high)
    assert infimum - ATOL - RTOL * infimum <= result.distance <= reachable + ATOL + RTOL * reachable


# ---------------------------------------------------------------------------------------------- answers that hold
def typed_back(result, x: np.ndarray, tree: ObliqueTree) -> np.ndarray:
    """The row as a reviewer types it: the row itself, each changed feature set to the text the page shows."""
    row = x.copy()
    for change in result.changes:
        row[tree.feature_names.index(change.feature)] = float(what_if.value_text(change.needed, change.step))
    return row


def gets(tree: ObliqueTree, row: np.ndarray, goal) -> bool:
    value = tree.predict(row[None])[0]
    if tree.is_classifier:
        return value == goal
    low, high = goal
    return (low is None or value >= low) and (high is None or value <= high)


def snapped_bounds(tree: ObliqueTree, x: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The default bounds as the answer keeps them: on the grid, inward, unless the row's own value is the bound."""
    _, low, high = default_box(tree, x)
    for j, step in enumerate(grid):
        if step > 0 and low[j] < x[j]:
            low[j] = min(x[j], grid_above(low[j], step))
        if step > 0 and high[j] > x[j]:
            high[j] = max(x[j], -grid_above(-high[j], step))
    return low, high


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.integers(1, 3), p=st.integers(2, 4),
       kind=st.sampled_from(["constant", "linear", "classes"]), quantile=st.floats(0.0, 1.0), row=st.integers(0, 299),
       side=st.sampled_from(["above", "below", "band"]), norm=st.sampled_from(["l1", "linf"]),
       n=st.integers(1, 3), support=st.sampled_from([0, 10, 40]), way=st.sampled_from([None, "increase", "decrease"]),
       whole=st.booleans(), data=st.data())
def test_answers_hold_typed_back_respect_every_constraint_and_are_minimal_on_random_trees(
        seed, depth, p, kind, quantile, row, side, norm, n, support, way, whole, data):
    if kind == "classes":
        tree, X, _ = trees.make_class_tree(depth=depth, p=p, seed=seed, n_rows=300)
        goal = tree.classes[data.draw(st.integers(0, len(tree.classes) - 1))]
    else:
        tree, X, _ = trees.make_tree(depth=depth, p=p, leaf=kind, seed=seed, n_rows=300)
        q = float(np.quantile(tree.predict(X), quantile))
        goal = {"above": (q, None), "below": (None, q), "band": (q - 0.5, q + 0.5)}[side]
    x = X[row].copy()
    integers = ["x0"] if whole else []
    x[0] = np.round(x[0]) if whole else x[0]
    directions = {"x1": way} if way else {}
    options = {"norm": norm, "n": n, "min_support": support, "directions": directions, "integers": integers}
    leaves = [tree.n_leaves + int(i) for i in np.flatnonzero(_leaves_meeting(tree, goal, None, support))]
    try:
        answers = counterfactual(tree, x, goal, **options)
    except CounterfactualError as exc:
        assert "No " in str(exc) or "Only leaves" in str(exc)
        answers = ()
    grid = _grid(tree, None, None, [0] if whole else [])
    for answer in answers:
        assert gets(tree, answer.x, goal) and tree.apply(answer.x[None])[0] == answer.leaf
        assert gets(tree, typed_back(answer, x, tree), goal)  # as shown, typed back
        assert np.array_equal(typed_back(answer, x, tree), answer.x)
        assert answer.leaf in leaves and (support == 0 or answer.support.rows >= support)
        if way:
            assert (answer.x[1] - x[1]) * (1 if way == "increase" else -1) >= 0
        if whole:
            assert answer.x[0] == np.round(answer.x[0])
        rng = np.random.default_rng(seed)  # any row within half a step of it, in each feature, gives the same answer
        for _ in range(5):
            near = answer.x + rng.uniform(-0.499, 0.499, size=p) * np.where(np.arange(p) == 0, 0, grid)
            assert tree.apply(near[None])[0] == answer.leaf and gets(tree, near, goal)
    assert [a.distance for a in answers] == sorted(a.distance for a in answers)
    assert len({a.leaf for a in answers}) == len(answers) <= n
    if whole or not leaves:
        return  # the reference solves linear programs only
    costs, _, _ = default_box(tree, x)
    low, high = snapped_bounds(tree, x, grid)
    if way == "increase":
        low[1] = max(low[1], x[1])
    elif way == "decrease":
        high[1] = min(high[1], x[1])
    line = goal if kind == "linear" else None
    full = {leaf: brute_force(tree, x, [leaf], costs, low, high, goal=line, norm=norm, margin=0.0, radius=grid)
            for leaf in leaves}
    half = {leaf: brute_force(tree, x, [leaf], costs, low, high, goal=line, norm=norm, margin=0.0, radius=grid / 2)
            for leaf in leaves}
    slack = float(np.sum(costs * grid) / 2) + ATOL
    if not answers:
        assert all(not np.isfinite(d) for d in full.values())
        return
    assert answers[0].distance <= min(full.values()) + slack + RTOL * answers[0].distance  # the nearest
    for answer in answers:  # the nearest in its leaf, and never nearer than its leaf allows
        assert half[answer.leaf] - ATOL - RTOL * answer.distance <= answer.distance
        assert answer.distance <= full[answer.leaf] + slack + RTOL * answer.distance
    others = [d for leaf, d in full.items() if leaf not in {a.leaf for a in answers}]
    if len(answers) < n:  # fewer answers than asked: no other leaf holds one with the full margin
        assert all(not np.isfinite(d) for d in others)
    else:  # the n nearest: no other leaf's answer would be nearer than the last one (but for snapping)
        assert all(d >= answers[-1].distance - 2 * slack - RTOL * d for d in others)


def test_an_answer_on_a_split_is_moved_inside_and_typed_back_holds():
    """Issue 49: the split's threshold is 43.34999995529652; the exact answer lies on it, the shown one inside."""
    tree = trees.class_stump(("B", "C"))
    tree.thresholds[:] = 2 * 43.34999995529652 - 0.0  # left ('B') iff 2*temp - pressure <= 86.69999991059304
    x = np.array([50.0, 0.0])
    exact_answer = exact(tree, x, "B")
    assert exact_answer.x[0] == pytest.approx(43.34999995529652)
    shown = exact_answer.changes[0]
    assert tree.predict(np.array([[float(f"{shown.needed:.4g}"), 0.0]]))[0] == "C"  # the old display's rounding
    answer = counterfactual(tree, x, "B", min_support=0)
    (change,) = answer.changes
    # a step of 0.001 (span 1); one step from the split in each free feature (temp's weight 2, pressure's -1)
    assert change.step == 0.001 and what_if.value_text(change.needed, change.step) == "43.348"
    assert tree.predict(typed_back(answer, x, tree)[None])[0] == "B" and answer.prediction == "B"
    assert type(answer.prediction) is str  # a label, never np.str_('B')
    assert change.keeps == (0.0, 43.349)  # from the bound to the last step before the split


def test_a_leaf_thinner_than_two_steps_holds_no_answer():
    """A sliver: leaf 6 (1 < x0 <= 1.004 on a span of 10, steps of 0.01) is reached exactly, never by default."""
    w = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    tree = ObliqueTree(weights=w, thresholds=[0.1, 0.05, 0.1004], leaf_intercepts=[0.0, 1.0, 2.0, 3.0],
                       leaf_coefs=np.zeros((4, 2)), n_samples=[0] * 7, node_values=[0.0] * 7, x_min=np.zeros(2),
                       x_scale=np.full(2, 10.0), y_min=0.0, y_scale=1.0)
    x = np.array([0.5, 5.0])
    assert exact(tree, x, leaf=6).leaf == 6
    with pytest.raises(CounterfactualError, match="No change to this row gives a way into leaf 6"):
        counterfactual(tree, x, leaf=6)
    assert counterfactual(tree, x, leaf=6, resolution={"x0": 1e-4}).leaf == 6  # a finer grid fits in it


def test_bounds_hold_on_the_grid_even_where_they_exclude_the_row():
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=6)
    x = X[2]
    value = tree.predict(x[None])[0]
    low = x[0] + 1.23456
    answer = counterfactual(tree, x, (value - 1e-9, value + 1e-9), bounds={"x0": (low, low + 0.5)}, min_support=0)
    (change,) = [c for c in answer.changes if c.feature == "x0"]
    assert low <= change.needed <= low + 0.5 and change.needed == float(what_if.value_text(change.needed, change.step))


def test_leaves_on_few_rows_are_skipped_unless_asked_and_then_flagged():
    tree, X, _ = trees.make_tree(depth=3, p=3, seed=21)
    top = int(np.argmax(tree.leaf_intercepts))
    tree.n_samples[tree.n_leaves - 1 + top] = 2  # the one leaf that gives the goal rests on 2 rows
    goal = (tree.predict(X).max(), None)
    x = X[tree.apply(X) != tree.n_leaves + top][0]
    with pytest.raises(CounterfactualError, match="Only leaves with at most 2 training rows give a prediction of at "
                                                  "least .*fewer than the 10 an answer needs.*min_support"):
        counterfactual(tree, x, goal)
    answer = counterfactual(tree, x, goal, min_support=2)
    assert answer.leaf == tree.n_leaves + top and answer.support.rows == 2 and answer.support.few
    assert what_if.sentence(tree, answer).endswith("; this rests on only 2 training rows.")


def test_support_carries_class_shares_a_regression_mean_and_the_nearest_reference_row():
    tree, X, y = trees.make_class_tree(depth=3, p=3, seed=5, n_rows=400)
    label = tree.classes[1]
    answers = counterfactual(tree, X[0], label, n=3, reference=X)
    for answer in answers:
        counts = tree.node_counts[answer.leaf - 1]
        assert answer.support.rows == tree.n_samples[answer.leaf - 1]
        assert answer.support.shares == pytest.approx(dict(zip(tree.classes, counts / counts.sum())))
        reached = X[tree.predict(X) == label]
        std = X.std(axis=0)
        assert answer.support.nearest == pytest.approx(np.min(np.sum(np.abs(reached - answer.x) / std, axis=1)))
    regression, Xr, _ = trees.make_tree(depth=2, p=3, seed=5)
    answer = counterfactual(regression, Xr[0], (np.quantile(regression.predict(Xr), 0.9), None))
    assert answer.support.mean == pytest.approx(regression.node_value_original(answer.leaf))
    assert answer.support.nearest is None and answer.support.spread is None


def test_the_values_each_change_keeps_give_the_same_answer_and_the_next_step_out_does_not():
    tree, X, _ = trees.make_tree(depth=4, p=3, seed=8, n_rows=1000)
    goal = (float(np.quantile(tree.predict(X), 0.8)), None)
    checked = 0
    for x in X[:10]:
        answer = counterfactual(tree, x, goal)
        for change in answer.changes:
            j = tree.feature_names.index(change.feature)
            low, high = change.keeps
            assert low <= change.needed <= high
            for value in np.linspace(low, high, 7):
                row = answer.x.copy()
                row[j] = value
                assert tree.apply(row[None])[0] == answer.leaf and gets(tree, row, goal)
            beyond = answer.x.copy()
            beyond[j] = high + 2 * change.step  # past a split (or the bounds, where the leaf may go on)
            if beyond[j] <= tree.x_min[j] + tree.x_scale[j]:
                assert tree.apply(beyond[None])[0] != answer.leaf or not gets(tree, beyond, goal)
                checked += 1
    assert checked


def test_round_off_is_no_change_and_the_cap_holds_on_a_dense_deep_tree():
    """Issue 50: max_changes=10 gave 13 changes on a dense depth-8 tree, three of them 1e-13."""
    tree, X = routed_tree(depth=8, p=16, seed=3)
    goal = (float(np.quantile(tree.predict(X), 0.9)), None)
    for solve in (exact, counterfactual):
        for x in X[tree.predict(X) < goal[0]][:2]:
            answer = solve(tree, x, goal, max_changes=10)
            moved = np.flatnonzero(answer.x != x)
            assert len(answer.changes) == len(moved) <= 10
            assert np.all(np.abs(answer.x[moved] - x[moved]) > 1e-9 * tree.x_scale[moved])


def test_a_flag_the_solver_left_a_hair_above_zero_moves_nothing():
    """The cap's flags are integers only to the solver's tolerance: a move under a flag of 1e-7 is round-off."""
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=1)
    x = X[0]
    space = _space(tree, x, None, set(), {}, 1.0 / tree.x_scale, "l1", 1)
    solution = np.zeros(space.n_vars)
    solution[:3] = [0.2, 1e-7, 0.0]  # rises of x0 (flag 1) and x1 (flag 1e-7)
    solution[6:9] = [1.0, 1e-7, 0.0]
    moved = space.row_of(solution, exact=True)
    assert moved[0] == pytest.approx(x[0] + 0.2 * tree.x_scale[0]) and moved[1] == x[1] and moved[2] == x[2]
    assert space.row_of(solution)[1] != x[1]  # a relaxed program's flags mean nothing: its moves stand


def test_one_string_names_one_feature_and_a_bad_one_is_refused():
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=3, names=["AT", "V", "AP"])
    goal = upper_goal(tree, X, 0.6)
    answers = [counterfactual(tree, x, goal, locked="AT", min_support=0, resolution=0) for x in X[:5]]
    assert all(answer.x[0] == x[0] for answer, x in zip(answers, X))  # 'AT' is kept, 'A' and 'T' are no features
    with pytest.raises(CounterfactualError, match="locked: 'A' is not a feature of the model; its features are 'AT'"):
        counterfactual(tree, X[0], goal, locked="A")
    with pytest.raises(CounterfactualError, match="integers: 'T' is not a feature"):
        counterfactual(tree, X[0], goal, integers="T")


@pytest.mark.parametrize("options, message", [
    ({"directions": {"x0": "up"}}, r"directions\['x0'\] must be 'increase' or 'decrease'"),
    ({"directions": {"x0": "increase"}, "bounds": {"x0": (0.0, 1.0)}}, "may only increase from .* widen them"),
    ({"integers": ["x0"]}, "Feature 'x0' takes whole numbers, but the row holds"),
    ({"resolution": 0.1}, "resolution must be None"),
    ({"resolution": {"x0": 0}}, r"resolution\['x0'\] must be a finite number above 0"),
    ({"n": 0}, "n must be a whole number of at least 1"),
    ({"min_support": -1}, "min_support must be a whole number of at least 0"),
])
def test_malformed_constraints_are_refused_by_name(options, message):
    tree, X, _ = trees.make_tree(depth=2, p=3, seed=13)
    x = X[0] + 0.25
    with pytest.raises(CounterfactualError, match=message):
        counterfactual(tree, x, upper_goal(tree, X, 0.9), **options)


def test_a_categorical_column_takes_no_direction_and_whole_numbers_are_whole():
    tree, encoding, X = categorical_tree(3)
    goal = upper_goal(tree, X, 0.8)
    with pytest.raises(CounterfactualError, match="directions: 'color' is a categorical column"):
        counterfactual(tree, X[0], goal, encoding=encoding, directions={"color": "increase"})
    with pytest.raises(CounterfactualError, match="integers: 'color=red' is a level of a categorical column"):
        counterfactual(tree, X[0], goal, encoding=encoding, integers=["color=red"])
    x = X[0].copy()
    x[0] = np.round(x[0])
    for answer in counterfactual(tree, x, goal, encoding=encoding, integers="a", n=3, min_support=0):
        assert answer.x[0] == np.round(answer.x[0]) and set(answer.x[2:].tolist()) <= {0.0, 1.0}
        assert gets(tree, typed_back(answer, x, tree), goal)


@pytest.mark.parametrize("seed", range(4))
def test_a_whole_number_answer_is_as_near_as_trying_every_whole_value(seed):
    tree, X, _ = trees.make_tree(depth=3, p=2, seed=seed)
    goal = upper_goal(tree, X, 0.8)
    for x in np.round(X[:6]):  # x0 whole, x1 as it is
        x[1] = X[0][1]
        costs, low, high = default_box(tree, x)
        expected = np.inf
        for value in np.arange(np.ceil(low[0]), np.floor(high[0]) + 1):
            row = np.array([value, x[1]])
            for leaf in goal_leaves(tree, goal):
                expected = min(expected, costs[0] * abs(value - x[0]) + nearest_in_leaf(
                    tree, row, leaf, costs, low, high, np.array([False, True])))
        if not np.isfinite(expected):
            with pytest.raises(CounterfactualError):
                exact(tree, x, goal, integers="x0")
            continue
        answer = exact(tree, x, goal, integers="x0")
        assert answer.x[0] == np.round(answer.x[0]) and meets(tree, answer.x, goal)
        assert answer.distance == pytest.approx(expected, rel=1e-4, abs=1e-5)
