"""The what-if view: the sentence and table of a counterfactual, both paths on the diagram, the editor's sliders."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.data.encoding import Encoding
from dataclasses import replace

from get_core.model.counterfactual import Change, Counterfactual, Support
from get_core.model.counterfactual_programs import on_step
from get_core.views import diagram, diagram_content, what_if
from tests import trees


def answer(*changes: Change, prediction=452.3, leaf=21) -> Counterfactual:
    return Counterfactual(x=np.zeros(2), prediction=prediction, distance=1.0, leaf=leaf, changes=tuple(changes),
                          programs=1)


def test_the_sentence_says_each_move_and_where_the_row_lands():
    tree, _, _ = trees.make_tree(depth=2, p=2)
    result = answer(Change("V", 40.0, 43.1, 3.1), Change("AT", 20.0, 19.2, -0.8))
    assert what_if.sentence(tree, result) == ("Raise V by 3.1 to 43.1 and lower AT by 0.8 to 19.2: predicted 452.3, "
                                              "in leaf 21.")
    three = answer(Change("a", 1.0, 2.0, 1.0), Change("b", 1.0, 0.5, -0.5), Change("color", "red", "blue", None))
    assert what_if.sentence(tree, three) == ("Raise a by 1 to 2, lower b by 0.5 to 0.5 and switch color from 'red' to "
                                             "'blue': predicted 452.3, in leaf 21.")
    assert what_if.sentence(tree, answer()) == "Nothing needs to change: this row is already predicted 452.3, in " \
                                               "leaf 21."
    unseen = answer(Change("color", None, "blue", None))
    assert what_if.sentence(tree, unseen).startswith("Switch color from a level training never saw to 'blue': ")


def test_the_table_has_one_row_per_change():
    table = what_if.changes_table([Change("V", 40.0, 43.1, 3.1, keeps=(43.05, 44.5), step=0.05),
                                   Change("balance", 1233.47, 1140.0, -93.47, keeps=(1001.0, 1140.0), step=1.0),
                                   Change("color", "red", "blue", None)])
    assert list(table.columns) == ["feature", "now", "needed", "change", "keeps it"]
    assert table.to_dict("records") == [
        {"feature": "V", "now": "40", "needed": "43.10", "change": "+3.1", "keeps it": "any from 43.05 to 44.50"},
        {"feature": "balance", "now": "1,233", "needed": "1140", "change": "\u221293.47",
         "keeps it": "any from 1001 to 1140"},
        {"feature": "color", "now": "red", "needed": "blue", "change": "switch", "keeps it": ""}]


def test_a_needed_value_is_written_with_every_digit_of_its_step_or_in_full():
    assert what_if.value_text(43.36, 0.01) == "43.36" and what_if.value_text(2.5, 0.001) == "2.500"
    assert what_if.value_text(1e-05 * 3, 1e-05) == "0.00003" and what_if.value_text(1230.0, 10.0) == "1230"
    assert what_if.value_text(43.34999995529652, 0.0) == "43.34999995529652"
    assert float(what_if.value_text(-12345.678, 0.001)) == -12345.678


def test_the_sentence_says_what_the_answer_rests_on_and_names_a_class_plainly():
    tree, _, _ = trees.make_class_tree(depth=2, p=2, labels=["A", "B"])
    result = Counterfactual(x=np.zeros(2), prediction=np.str_("B"), distance=1.0, leaf=5, programs=1,
                            changes=(Change("x0", 1.0, 2.0, 1.0, step=0.01),),
                            support=Support(rows=2, shares={"A": 0.25, "B": 0.75}, few=True))
    assert what_if.sentence(tree, result) == ("Raise x0 by 1 to 2.00: predicted 'B', in leaf 5; this rests on only 2 "
                                              "training rows, 75% of them 'B'.")
    plenty = replace(result, support=Support(rows=40, shares={"A": 0.1, "B": 0.9}))
    assert what_if.sentence(tree, plenty).endswith("; this rests on 40 training rows, 90% of them 'B'.")


def test_the_support_note_says_what_the_leaf_holds_and_how_near_the_data_the_answer_is():
    tree, _, _ = trees.make_class_tree(depth=2, p=2, labels=["A", "B"])
    result = Counterfactual(x=np.zeros(2), prediction="B", distance=0.45, leaf=5, changes=(), programs=1,
                            support=Support(rows=40, shares={"A": 0.1, "B": 0.9}, nearest=0.31))
    assert what_if.support_note(tree, result) == ("Leaf 5 holds 40 training rows, 90% 'B', 10% 'A'; the nearest "
                                                  "training row the model gives this outcome is 0.31 away (the "
                                                  "answer: 0.45).")
    regression = replace(result, support=Support(rows=1, mean=12.5, spread=(10.0, 15.0)))
    assert what_if.support_note(tree, regression) == "Leaf 5 holds 1 training row, mean target 12.5 (from 10 to 15)."
    assert what_if.support_note(tree, replace(result, support=Support(rows=None))) == ""


def test_the_goal_starts_away_from_todays_prediction():
    tree, X, _ = trees.make_tree(depth=3, p=3, seed=4)
    for x in X[:20]:
        now = tree.predict(x[None])[0]
        mode, low, high = what_if.default_goal(tree, x)
        goal = what_if.regression_goal(mode, low, high)
        assert not ((goal[0] is None or now >= goal[0]) and (goal[1] is None or now <= goal[1]))
    classes, Xc, _ = trees.make_class_tree(depth=2, p=3, seed=1)
    for x in Xc[:10]:
        assert what_if.default_goal(classes, x) != classes.predict(x[None])[0]


def test_whole_columns_are_those_whole_in_every_reference_row_and_the_row():
    tree, X, _ = trees.make_tree(depth=2, p=3)
    X[:, 1] = np.round(X[:, 1])
    assert what_if.whole_columns(tree, np.round(X[0]), X) == ["x1"]
    assert what_if.whole_columns(tree, X[0] + 0.5, X) == [] and what_if.whole_columns(tree, X[0], None) == []


def test_ask_finds_a_change_and_both_paths():
    tree, X, _ = trees.make_tree(depth=3, p=3, seed=1)
    x = X[0]
    goal = what_if.regression_goal("at least", float(np.quantile(tree.predict(X), 0.9)), None)
    found = what_if.ask(tree, x, goal)
    assert found.old_path == tuple(tree.decision_path(x[None])[0])
    assert found.new_path[-1] == found.result.leaf == tree.apply(found.result.x[None])[0]
    assert found.sentence.endswith(f"in leaf {found.result.leaf}; this rests on {found.result.support.rows} training "
                                   "rows.")
    with pytest.raises(ValueError, match="mode must be one of"):
        what_if.regression_goal("over", 1.0, None)


def test_both_paths_are_drawn_in_their_colours_and_opened_on_a_deep_tree():
    tree, X, _ = trees.make_tree(depth=6, p=3, seed=2, n_rows=2000)
    old, new = what_if.path_of(tree, X[0]), what_if.path_of(tree, X[1])
    options = what_if.paths_options(tree, diagram.DiagramOptions(levels=2), old, new)
    shown = diagram_content.visible_nodes(tree, options)
    assert old[-1] in shown and new[-1] in shown
    dot = diagram.to_dot(tree, options)
    for path, colour in ((old, what_if.OLD_PATH_COLOR), (new, what_if.NEW_PATH_COLOR)):
        for parent, child in zip(path[:-1], path[1:]):
            edge = re.search(rf"n{parent} -> n{child} \[([^\]]*)\]", dot).group(1)
            assert colour in edge
    other = next(t for t in shown if t not in old and t not in new and t != 1)
    assert not re.search(rf"n{other // 2} -> n{other} \[[^\]]*get-path-edge", dot)


def test_sliders_span_the_training_range_and_categorical_columns_offer_their_levels():
    names = ["a", "color=blue", "color=red"]
    tree, X, _ = trees.make_tree(depth=2, p=3, names=names)
    tree.x_min[1:], tree.x_scale[1:] = 0.0, 1.0
    encoding = Encoding(target="y", numeric=("a",), categories={"color": ("blue", "red")}, impute={},
                        feature_names=tuple(names), columns=("a", "color"))
    x = np.array([tree.x_min[0] + tree.x_scale[0] + 5.0, 0.0, 1.0])  # beyond the training range
    numeric, colour = what_if.sliders(tree, x, encoding)
    assert (numeric.low, numeric.high, numeric.value) == (tree.x_min[0], x[0], x[0])
    assert colour.levels == ("blue", "red") and colour.value == "red"
    edited = what_if.edited_row(tree, {"a": 1.5, "color": "blue"}, encoding)
    assert edited.tolist() == [1.5, 1.0, 0.0]
    typical = what_if.typical_row(tree, np.column_stack([X[:, 0], np.tile([[1.0, 0.0]], (len(X), 1))]), encoding)
    assert typical[0] == pytest.approx(np.median(X[:, 0])) and typical[1:].tolist() == [1.0, 0.0]


@settings(max_examples=300, deadline=None)
@given(value=st.floats(-1e12, 1e12, allow_nan=False), exponent=st.integers(-12, 6))
def test_a_value_on_its_grid_reads_back_as_itself(value, exponent):
    step = float(f"1e{exponent}")
    on_grid = on_step(value, step)
    assert float(what_if.value_text(on_grid, step)) == on_grid
    assert abs(on_grid - value) <= step / 2 * (1 + 1e-9) + abs(value) * 1e-15
    assert float(what_if.value_text(value, 0.0)) == value  # without a grid, in full
