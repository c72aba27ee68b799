"""No dead rules (get_core/model/prune.py): fits leave no split that sends every training row one way and no empty
leaf in anything a reader sees; collapsing keeps every training row's leaf, and every export still predicts as
``predict`` does."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from get_core import GETClassifier, GETRegressor, export
from get_core.model import codegen, model_file, prune
from get_core.model.counterfactual import CounterfactualError, counterfactual
from get_core.views import diagram, diagram_content, explain, labels, summary
from tests.test_export import _leaf_by_rules
from tests.trees import make_class_tree, make_tree


def three_classes(seed: int, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """A 3-class table of ``n`` rows on 5 features, classes cut from a noisy oblique score."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) * [1.0, 2.0, 0.5, 10.0, 1.0]
    score = X[:, 0] + 0.5 * X[:, 1] - 0.1 * X[:, 3] + 0.4 * rng.normal(size=n)
    return X, np.array(["low", "mid", "high"])[np.digitize(score, np.quantile(score, [0.33, 0.66]))]


def dead_rules(tree, X: np.ndarray) -> dict[str, list[int]]:
    """What a reader would see of dead rules, counted on the training rows ``X``: drawn splits one of whose sides
    gets no row, drawn leaves with no row, and drawn one-feature thresholds outside that feature's training range."""
    counts = np.bincount(tree.decision_path(X).ravel(), minlength=tree.n_nodes + 1)
    drawn = diagram_content.visible_nodes(tree, diagram_content.DiagramOptions(levels=tree.depth + 1))
    branches = [t for t in drawn if not tree.is_leaf(t)]
    outside = []
    for t in branches:
        single = labels.feature_threshold(tree, t, 3)
        if single is not None and not X[:, single.term.index].min() <= single.value <= X[:, single.term.index].max():
            outside.append(t)
    return {"dead splits": [t for t in branches if 0 in (counts[s] for s in prune.shown_children(tree, t))],
            "empty leaves": [t for t in drawn if tree.is_leaf(t) and counts[t] == 0], "outside": outside}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_depth_5_class_fits_show_no_dead_split_no_empty_leaf_and_no_threshold_outside_the_data(seed):
    X, y = three_classes(seed)
    tree = GETClassifier(depth=5, n_starts=2, n_epochs=80, random_state=seed).fit(X, y).tree_
    assert dead_rules(tree, X) == {"dead splits": [], "empty leaves": [], "outside": []}
    drawn = diagram_content.visible_nodes(tree, diagram_content.DiagramOptions(levels=tree.depth + 1))
    assert sorted(drawn) == sorted(np.flatnonzero(prune.live(tree)) + 1)
    rules = export.rule_lines(tree)
    assert sum(line.lstrip().startswith("return") for line in rules) == len(prune.live_leaves(tree))
    assert not any(re.search(r"if -?0 (<=|>=) ", line) for line in rules)
    np.testing.assert_array_equal(np.bincount(tree.decision_path(X).ravel(), minlength=tree.n_nodes + 1)[1:],
                                  tree.n_samples)  # the model's counts are its training rows'
    in_words = summary.summarize(tree)
    assert (in_words.n_rules, in_words.n_empty) == (len(prune.live_leaves(tree)), 0)
    assert all({"node", "kept", "rows"} == set(c) for c in tree.meta["collapsed"])


def test_a_regression_fit_collapses_its_dead_splits_and_says_which():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(150, 3))
    y = np.where(X[:, 0] > 0.5, 2.0, 0.0) + 0.01 * rng.normal(size=150)
    tree = GETRegressor(depth=5, n_starts=1, n_epochs=40, random_state=0).fit(X, y).tree_
    assert dead_rules(tree, X) == {"dead splits": [], "empty leaves": [], "outside": []}
    for c in tree.meta["collapsed"]:
        assert c["kept"] // 2 == c["node"] and prune.passes_to(tree, c["node"]) == c["kept"]
        assert tree.n_samples[c["kept"] - 1] == tree.n_samples[c["node"] - 1] == c["rows"]


# ---------------------------------------------------------------------------------------------- Hypothesis
@st.composite
def trees_with_dead_splits(draw) -> tuple[Any, np.ndarray]:
    """A random tree (regression or classes) and its training rows, with some splits moved past every row that
    reaches them (all of them left or right) and some made pass-throughs already, as a CART start leaves them."""
    depth, p, seed = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(0, 10 ** 6))
    kind = draw(st.sampled_from(["constant", "linear", "classes"]))
    tree, X, _ = (make_class_tree(depth=depth, p=p, seed=seed, n_rows=60) if kind == "classes"
                  else make_tree(depth=depth, p=p, leaf=kind, seed=seed, n_rows=60))
    margins = tree.scale_X(X) @ tree.weights.T
    for node in range(1, tree.n_leaves):
        how = draw(st.sampled_from(["keep", "keep", "all left", "all right", "pass-through"]))
        if how == "all left":
            tree.thresholds[node - 1] = margins[:, node - 1].max() + 0.5
        elif how == "all right":
            tree.thresholds[node - 1] = margins[:, node - 1].min() - 0.5
        elif how == "pass-through":
            tree.weights[node - 1], tree.thresholds[node - 1] = 0.0, draw(st.sampled_from([1.0, -1.0]))
    return tree, X


def fresh_rows(p: int):
    """Rows to score after collapsing: ordinary numbers, with NaN, infinities and huge values among them."""
    return arrays(np.float64, st.tuples(st.integers(1, 12), st.just(p)),
                  elements=st.one_of(st.floats(-30, 30), st.floats(allow_nan=True, allow_infinity=True)))


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(trees_with_dead_splits(), st.data())
def test_collapsing_keeps_every_training_rows_leaf_and_every_export_predicts_as_predict(case, data):
    before, X = case
    tree = prune.collapse_dead_splits(before, X)
    np.testing.assert_array_equal(tree.apply(X), before.apply(X))
    np.testing.assert_array_equal(tree.predict(X), before.predict(X))
    counts = np.bincount(tree.decision_path(X).ravel(), minlength=tree.n_nodes + 1)
    assert all(counts[left] and counts[right] for left, right in map(lambda t: (2 * t, 2 * t + 1),
                                                                      prune.live_branches(tree)))
    assert all(counts[t] for t in prune.live_leaves(tree))

    rows = data.draw(fresh_rows(tree.n_features))
    namespace: dict[str, Any] = {}
    exec(compile(codegen.python_source(tree), "generated.py", "exec"), namespace)
    assert [namespace["leaf"](list(x)) for x in rows] == tree.apply(rows).tolist()
    np.testing.assert_array_equal(np.array([namespace["predict"](list(x)) for x in rows]), tree.predict(rows))
    loaded = model_file.load_model_json(model_file.model_json(tree))
    np.testing.assert_array_equal(loaded.apply(rows), tree.apply(rows))
    assert set(tree.apply(rows)) <= set(prune.live_leaves(tree).tolist())  # no row lands on the dead side
    finite = np.clip(np.nan_to_num(rows, nan=0.0), -30.0, 30.0)
    lines = export.rule_lines(tree)
    assert [_leaf_by_rules(lines, tree.feature_names, x) for x in finite] == tree.apply(finite).tolist()
    for x in finite[:3]:
        explained = explain.explain_row(tree, x)
        assert explained["path"][-1] == tree.apply(x[None])[0]
        assert all(prune.passes_to(tree, node) is None for node in explained["path"])


def test_splits_with_rows_on_both_sides_are_left_as_they_were():
    tree, X, _ = make_tree(depth=3, p=3, seed=1, n_rows=400)
    collapsed = prune.collapse_dead_splits(tree, X)
    counts = np.bincount(tree.decision_path(X).ravel(), minlength=tree.n_nodes + 1)
    both = [t for t in range(1, tree.n_leaves) if counts[2 * t] and counts[2 * t + 1]]
    assert both and [c["node"] for c in collapsed.meta["collapsed"]] == [
        t for t in range(1, tree.n_leaves) if counts[t] and t not in both]
    np.testing.assert_array_equal(collapsed.weights[np.array(both) - 1], tree.weights[np.array(both) - 1])
    np.testing.assert_array_equal(collapsed.thresholds[np.array(both) - 1], tree.thresholds[np.array(both) - 1])


def test_the_diagram_draws_a_pass_through_s_live_child_in_its_place_with_yes_no_edges():
    tree, X, _ = make_tree(depth=2, p=2, seed=0, empty_subtree=True)  # every row goes left at the root
    tree = prune.collapse_dead_splits(tree, X)
    assert tree.meta["collapsed"] == [{"node": 1, "kept": 2, "rows": len(X)}]
    dot = diagram.to_dot(tree, diagram_content.DiagramOptions(levels=3))
    assert "n1 " not in dot and "n3 " not in dot and re.findall(r"n(\d+) -> n(\d+)", dot) == [("2", "4"), ("2", "5")]
    assert re.findall(r'label=(\w+)', dot.split("n2 -> n4", 1)[1]) [:2] == ["yes", "no"]
    assert tree.n_parameters == 1 * 3 + 2 and labels.path_rules(tree, 4)[0] == labels.split_text(tree, 2)


def test_counterfactuals_answer_in_live_leaves_and_refuse_the_dead_side_in_a_sentence():
    tree, X, _ = make_class_tree(depth=3, p=2, seed=4, empty_subtree=True)  # the root sends every row left
    tree = prune.collapse_dead_splits(tree, X)
    live = set(prune.live_leaves(tree).tolist())
    for goal in {tree.classes[k] for k in tree.leaf_class_index[np.array(sorted(live)) - tree.n_leaves]}:
        answer = counterfactual(tree, X[0], goal)
        assert answer.leaf in live and answer.prediction == goal
    with pytest.raises(CounterfactualError):
        counterfactual(tree, X[0], leaf=tree.n_nodes)  # the last leaf: on the root's dead right side


def test_a_collapsed_root_opens_the_diagram_at_its_live_child_and_reveals_any_node_asked_for():
    tree, X, _ = make_tree(depth=3, p=2, seed=0, empty_subtree=True)  # every row goes left at the root
    tree = prune.collapse_dead_splits(tree, X)
    options = diagram_content.DiagramOptions(levels=2)
    assert diagram_content.visible_nodes(tree, options)[0] == 2
    assert 2 in diagram_content.visible_nodes(tree, diagram_content.reveal(tree, options, 1))  # the root: node 2
    for node in (3, 7, 15):  # the dead side: nothing to open, no error
        assert diagram_content.reveal(tree, options, node).expanded <= {2, 4, 5}
