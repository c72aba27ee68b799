"""Splits of a tree fitted on a table as it comes, written in its columns' terms (issue 47): a category column as
one term (``colour in {red}`` at one column, its weights per category otherwise), a number's missing values as what
they count as, and every such sentence routes rows as ``predict`` does."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from get_core import GETRegressor
from get_core.views import labels


@pytest.fixture(scope="module")
def fitted() -> tuple:
    rng = np.random.default_rng(0)
    n = 400
    colour = rng.choice(["red", "green", "blue"], n)
    income = rng.normal(50, 10, n)
    y = (colour == "red") * 3 + income / 10 + rng.normal(0, 0.1, n)
    income[rng.random(n) < 0.2] = np.nan
    X = pd.DataFrame({"colour": colour, "income": income, "age": rng.normal(size=n)})
    model = GETRegressor(depth=2, n_starts=1, n_epochs=30, random_state=0, max_split_features=1).fit(X, y)
    return model.tree_, X


def _goes_left(tree, node: int, X: pd.DataFrame) -> np.ndarray:
    path = tree.decision_path(X)
    level = node.bit_length() - 1
    return path[:, level + 1] == 2 * node


def test_a_category_split_names_its_levels_and_routes_every_row_as_predict(fitted):
    tree, X = fitted
    parts = labels.split_parts(tree, 1)
    assert parts[0] == ["colour"] and parts[1] in ("in", "not in")
    levels = set(parts[2].strip("{}").split(", "))
    X_new = pd.concat([X, X.head(3).assign(colour=["violet", None, "teal"])])  # unseen and missing values too
    inside = X_new["colour"].isin(levels).to_numpy()
    said_left = inside if parts[1] == "in" else ~inside
    assert (said_left == _goes_left(tree, 1, X_new)).all()
    right = labels.split_parts(tree, 1, go_right=True)
    assert {right[1], parts[1]} == {"in", "not in"} and right[2] == parts[2]


def test_a_number_with_holes_says_what_a_missing_value_counts_as(fitted):
    tree, X = fitted
    node = next(t for t in (2, 3) if labels.split_parts(tree, t)[0] == ["income"])
    lhs, op, number = labels.split_parts(tree, node, digits=None, unicode=False)
    value, counts_as = number.split(" (if missing: counts as ")
    counts_as = float(counts_as.rstrip(")"))
    rows = X.head(40).assign(income=np.r_[np.linspace(20, 80, 39), np.nan])
    reached = labels.path_to(node)
    rows = rows[tree.decision_path(rows)[:, len(reached) - 1] == node]
    as_written = rows["income"].fillna(counts_as)
    said_left = as_written <= float(value) if op == "<=" else as_written >= float(value)
    assert (said_left.to_numpy() == _goes_left(tree, node, rows)).all()
    assert labels.term_count(tree, node) == 1


def test_several_columns_read_as_terms_a_category_column_as_its_weights(fitted):
    tree, _ = fitted
    names = tree.feature_names  # colour=blue, colour=green, colour=red, income, income=missing, age
    weights = tree.weights.copy()
    weights[0] = [0.5, -0.3, 0.0, 0.8, 0.2, -0.1]
    dense = replace(tree, weights=weights)
    text = labels.split_text(dense, 1)
    assert names.index("income=missing") == 4
    assert text.startswith("0.012·income (if missing: ") and "+ colour[blue 0.5, green −0.3]" in text
    assert "colour=" not in text and labels.term_count(dense, 1) == 3
    exact = labels.split_text(dense, 1, digits=None, unicode=False)
    assert "colour[blue 0.5, green -0.3]" in exact and "<=" in exact


def test_a_split_on_whether_a_value_is_missing_says_so(fitted):
    tree, _ = fitted
    weights, thresholds = tree.weights.copy(), tree.thresholds.copy()
    weights[0] = [0, 0, 0, 0, 0.7, 0]
    thresholds[0] = 0.3
    flagged = replace(tree, weights=weights, thresholds=thresholds)
    assert labels.split_text(flagged, 1) == "income is not missing"
    assert labels.split_text(flagged, 1, go_right=True) == "income is missing"


def test_a_tree_of_plain_numbers_reads_as_before(fitted):
    _, X = fitted
    plain = X.drop(columns="colour").fillna(0.0)
    tree = GETRegressor(depth=1, n_starts=1, n_epochs=5, random_state=0).fit(plain, plain["age"] * 2).tree_
    assert tree.inputs is None and labels.in_columns(tree, 1) is None
