"""Issue 35, defect 4: a one-feature split reads as a threshold (``cylinders ≤ 4.5``, not ``0.2·cylinders ≤ 0.9``)
in the diagram, the node panel's rules, the rules export and the report; a 1e-28 term is not printed in rounded
text; large rounded numbers are written whole (``2,820``, not ``2.82e+03``). Exact text still routes as ``predict``."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core import export
from get_core.model.tree import ObliqueTree
from get_core.views import diagram, labels
from tests.trees import make_tree

NAMES = ["cylinders", "weight", "model_year"]


def axis_tree(weight: float = 0.2) -> tuple[ObliqueTree, np.ndarray]:
    tree, X, _ = make_tree(depth=2, p=3, names=NAMES, one_feature_root=0, tiny_term=True, seed=3)
    tree.weights[0, 0] = weight
    return tree, X


def test_a_one_feature_split_reads_as_the_feature_against_its_threshold_everywhere():
    tree, _ = axis_tree()
    _, c = tree.split_in_original_units(1)
    a = tree.split_in_original_units(1)[0][0]
    expected = f"cylinders \u2264 {labels.fmt(c / a)}"
    assert labels.split_text(tree, 1) == expected
    assert labels.path_rules(tree, 2, digits=4) == [f"cylinders \u2264 {labels.fmt(c / a, 4)}"]  # node panel
    assert labels.path_rules(tree, 3, digits=4) == [f"cylinders > {labels.fmt(c / a, 4)}"]
    assert expected in diagram.node_label(tree, 1)
    root = export.rule_lines(tree)[0]
    assert root.startswith("if cylinders <= ") and root.endswith(":  # node 1"), root
    assert "cylinders \u2264" in export.html_report(tree, created="now")


def test_a_negative_weight_reads_as_at_least():
    tree, _ = axis_tree(weight=-7.14)
    assert labels.split_text(tree, 1).startswith("cylinders \u2265 ")
    assert labels.split_text(tree, 1, go_right=True).startswith("cylinders < ")
    assert "if cylinders >= " in export.rules_text(tree)


@settings(derandomize=True, deadline=None, max_examples=200)
@given(st.floats(-1e3, 1e3).filter(lambda w: abs(w) > 1e-6), st.floats(-1e3, 1e3), st.floats(-1e6, 1e6),
       st.floats(1e-6, 1e6))
def test_the_exact_threshold_is_the_last_value_sent_left(weight, threshold, x_min, x_scale):
    tree = ObliqueTree(weights=[[weight, 0.0]], thresholds=[threshold], leaf_intercepts=[0.0, 1.0],
                       leaf_coefs=np.zeros((2, 2)), n_samples=np.ones(3), node_values=np.zeros(3),
                       x_min=[x_min, 0.0], x_scale=[x_scale, 1.0], feature_names=["a", "b"])
    found = labels.feature_threshold(tree, 1)
    assert found is not None and found.below == (weight > 0)
    t = found.value
    beyond = np.nextafter(t, np.inf if found.below else -np.inf)
    rows = np.array([[t, np.nan], [beyond, np.nan]])
    assert tree.goes_left(1, rows).tolist() == [True, False]
    assert tree.apply(rows).tolist() == [2, 3]
    text = labels.split_text(tree, 1, digits=None, unicode=False)  # the exact form routes as predict
    assert text == f"a {'<=' if found.below else '>='} {labels.fmt(t, None, unicode=False)}"
    assert float(text.rsplit(" ", 1)[1]) == t


def test_a_negligible_term_is_left_out_of_rounded_text_only():
    tree, _ = axis_tree()
    rounded, exact = labels.split_text(tree, 2), labels.split_text(tree, 2, digits=None)
    assert "model_year" not in rounded and "e-28" not in rounded
    assert "model_year" in exact  # the exact form (rules export, hover text) writes every term
    assert "model_year" not in diagram.node_label(tree, 2)
    assert "model_year" not in export.rule_lines(tree, decimals=4)[1]  # rounded rules leave it out too
    assert "model_year" in export.rule_lines(tree)[1]  # rules in full keep it: they route as predict does


def test_a_split_left_with_one_term_after_the_negligible_ones_reads_as_a_threshold():
    tree, _ = axis_tree()
    tree.weights[0, 2] = 1e-28
    assert labels.split_text(tree, 1).startswith("cylinders \u2264 ")
    assert "model_year" in labels.split_text(tree, 1, digits=None)


@pytest.mark.parametrize("value, digits, unicode, text", [
    (2823.4, 3, True, "2,820"), (2823.4, 3, False, "2820"), (-123456.7, 4, True, "\u2212123,500"),
    (1234.5678, 6, True, "1,234.57"), (0.000012345, 3, True, "1.23e-05"), (4.5, 3, True, "4.5"),
    (1e20, 3, True, "1e+20")])
def test_large_rounded_numbers_are_written_whole(value, digits, unicode, text):
    assert labels.fmt(value, digits, unicode) == text


def test_a_leaf_worth_thousands_reads_whole_in_the_diagram():
    tree, _ = axis_tree()
    tree.y_min, tree.y_scale = 20_000.0, 1000.0
    label = diagram.node_label(tree, 4)
    assert "e+0" not in label and "," in label


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")
def test_the_svg_diagram_writes_the_threshold():
    tree, _ = axis_tree()
    assert "cylinders" in export.svg_source(tree) and "0.2&#183;cylinders" not in export.svg_source(tree)
