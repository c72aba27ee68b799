"""The node panel, the summary's importance and the what-if editor on a tree fitted on raw columns (issue 47): they
take the rows as ``predict`` does (missing values, categories) and speak of the user's columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from get_core import GETRegressor
from get_core.config import GETConfig
from get_core.data.encoding import DataSpec, prepare
from get_core.runs.training import fit_tree
from get_core.views import explain, node, summary, what_if


@pytest.fixture(scope="module")
def app_run() -> tuple:
    """A run as the app trains it with missing values kept: income has holes, colour is one-hot encoded."""
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"income": rng.normal(50, 10, n), "age": rng.normal(40, 5, n),
                       "colour": rng.choice(["red", "blue", "green"], n)})
    df["y"] = df.income / 10 + (df.colour == "red") * 2 + rng.normal(0, 0.1, n)
    df.loc[rng.random(n) < 0.2, "income"] = np.nan
    prepared = prepare(df, DataSpec(target="y", features=("income", "age", "colour"), missing="keep"),
                       fit_rows=np.arange(200))
    config = GETConfig(depth=2, n_starts=1, n_epochs=20, random_state=0, device="cpu", max_split_features=1)
    tree = fit_tree(prepared.X[:200], prepared.y[:200], config, prepared.feature_names, None)
    return tree, prepared, df


def test_the_node_panel_takes_rows_with_holes_and_counts_them_where_predict_sends_them(app_run):
    tree, prepared, _ = app_run
    X, y = prepared.X[:200], prepared.y[:200]
    assert np.isnan(X).any() and tree.inputs is not None
    stats = node.node_stats(tree, 1, X, y, prepared.X[200:], prepared.y[200:])
    assert stats["n_train"] == 200 and stats["n_left_train"] + stats["n_right_train"] == 200
    std = node.feature_std(X, tree)
    assert std.shape == (tree.n_features,) and np.isfinite(std).all()
    node.weights_figure(tree, 1, "standardized", std)
    node.projection_figure(tree, 1, X, y)
    income = next(t for t in (1, 2, 3) if "income" in set(node.term_table(tree, t, X, y)["feature"]))
    table = node.term_table(tree, income, X, y)
    row = table[table["feature"] == "income"].iloc[0]
    assert row["levels"].startswith("if missing: counts as ") and "income=missing" not in set(table["feature"])


def test_importance_counts_a_number_and_its_missing_input_as_one_column(app_run):
    tree, prepared, _ = app_run
    shares = dict(summary.feature_shares(tree, prepared.X[:200]))
    assert "income=missing" not in shares and set(shares) == {"income", "age", "colour=blue", "colour=green",
                                                               "colour=red"}
    assert sum(shares.values()) == pytest.approx(100.0)


def test_the_what_if_editor_and_uploaded_rows_use_the_raw_columns(app_run):
    tree, prepared, df = app_run
    x = prepared.X[int(np.flatnonzero(np.isnan(prepared.X[:, 0]))[0])]
    sliders = {s.column: s for s in what_if.sliders(tree, x, prepared.encoding)}
    assert np.isfinite(sliders["income"].value) and sliders["income"].low <= sliders["income"].value
    row = what_if.typical_row(tree, prepared.X[:200], prepared.encoding)
    assert row.shape == (len(prepared.feature_names),) and np.isfinite(row).all()
    rows = explain.rows_to_X(tree, df.drop(columns="y").head(20), prepared.encoding)
    assert rows.problems == {} and np.isnan(rows.X[:, 0]).any()
    assert np.isfinite(tree.predict(rows.X)).all()


def test_a_category_column_is_one_row_of_the_terms_table_and_one_share_of_importance():
    rng = np.random.default_rng(1)
    n = 300
    X = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], n), "size": rng.normal(size=n)})
    y = (X["colour"] == "red") * 3.0 + X["size"]
    tree = GETRegressor(depth=2, n_starts=1, n_epochs=20, random_state=0).fit(X, y).tree_
    at = next(t for t in (1, 2, 3) if np.any(tree.weights[t - 1, :3] != 0))
    table = node.ranked_terms(tree, at, X)
    colour = table[table["feature"] == "colour"].iloc[0]
    assert np.isnan(colour["weight"]) and "red" in colour["levels"]
    assert set(dict(summary.feature_shares(tree, X))) == {"colour", "size"}


def test_a_counterfactual_keeps_a_missing_value_missing_and_moves_a_present_one(app_run):
    tree, prepared, _ = app_run
    X = prepared.X[200:]
    goal = (float(tree.predict(prepared.X).max()) - 0.01, None)  # the best leaf
    holed = X[np.isnan(X[:, 0])][0]
    answer = what_if.ask(tree, holed, goal, encoding=prepared.encoding)
    assert "income" not in set(answer.table.iloc[:, 0]) and answer.result.prediction >= goal[0]
    assert answer.old_path == what_if.path_of(tree, holed)  # the engine's path is the tree's own
    present = what_if.ask(tree, X[~np.isnan(X[:, 0])][0], goal, encoding=prepared.encoding)
    assert present.result.prediction >= goal[0]


def test_the_weights_table_names_a_missing_input_in_words_and_the_forest_by_raw_column(app_run):
    tree, prepared, _ = app_run
    table = node.weight_table(tree, 1)
    assert "income (if missing)" in set(table["feature"]) and "income=missing" not in set(table["feature"])
    importances = np.arange(1.0, len(prepared.feature_names) + 1)  # a forest's, one per raw column
    forest = node.forest_importance_table(tree, 1, importances)
    income = forest[forest["feature"] == "income"]["forest"].iloc[0]
    assert income == importances[prepared.feature_names.index("income")]


def test_a_row_with_a_hole_is_explained_step_by_step_as_predict_routes_it(app_run):
    tree, prepared, _ = app_run
    X = prepared.X[200:]
    holed = X[np.isnan(X[:, 0])][0]
    result = explain.explain_row(tree, holed)
    assert result["prediction"] == pytest.approx(float(tree.predict(holed[None])[0]))
    assert result["path"][-1] == result["leaf"] == int(tree.apply(holed[None])[0])
    features = {c["feature"] for step in result["steps"] for c in step["contributions"]}
    assert "income=missing" not in features
    table = explain.explain_rows(tree, X)
    assert np.allclose(table["prediction"], tree.predict(X)) and (table["leaf"] == tree.apply(X)).all()


def test_the_longest_rule_counts_a_category_column_once():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"colour": rng.choice(["red", "green", "blue", "grey"], 200), "size": rng.normal(size=200)})
    tree = GETRegressor(depth=1, n_starts=1, n_epochs=5, random_state=0).fit(X, X["size"] * 2).tree_
    assert tree.n_features == 5  # four colours and size
    assert summary.longest_rule_terms(tree) == int(tree.split_terms.max()) <= 2  # colour once, size once


@pytest.fixture(scope="module")
def category_run() -> tuple:
    """A run as the app trains it by default: colour goes to the estimator as categories (one group), income has
    holes, and colour is missing in a few rows."""
    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame({"income": rng.normal(50, 10, n), "age": rng.normal(40, 5, n),
                       "colour": rng.choice(["red", "blue", "green"], n)})
    df["y"] = df.income / 10 + (df.colour == "red") * 4 + rng.normal(0, 0.1, n)
    df.loc[rng.random(n) < 0.2, "income"] = np.nan
    df.loc[rng.random(n) < 0.05, "colour"] = None
    prepared = prepare(df, DataSpec(target="y", features=("income", "age", "colour"), missing="keep", one_hot=False),
                       fit_rows=np.arange(200))
    config = GETConfig(depth=2, n_starts=1, n_epochs=30, random_state=0, device="cpu", max_split_features=1)
    tree = fit_tree(prepared.X[:200], prepared.y[:200], config, prepared.feature_names, None)
    return tree, prepared, df


def test_the_what_if_editor_offers_a_category_columns_levels_and_its_missing_level(category_run):
    tree, prepared, _ = category_run
    encoding, X = prepared.encoding, prepared.X
    assert tree.inputs.columns[2].kind == "category"
    missing = next(i for i in range(len(X)) if X[i, 2] is None)
    controls = {c.column: c for c in what_if.sliders(tree, X[missing], encoding)}
    assert controls["colour"].levels == ("blue", "green", "red", "(missing)") and controls["colour"].value == "(missing)"
    values = {c: control.value for c, control in controls.items()}
    assert what_if.edited_row(tree, values, encoding)[2] is None  # still missing, predicted as before
    red = what_if.edited_row(tree, {**values, "colour": "red"}, encoding)
    assert red[2] == "red" and np.isfinite(tree.predict(red[None])[0])
    start = what_if.typical_row(tree, X[:200], encoding)
    assert start[2] in {"blue", "green", "red"} and isinstance(start[0], float)
    assert what_if.path_of(tree, start)[0] == 1
    assert what_if.whole_columns(tree, start, X[:200], encoding) == []


def test_a_counterfactual_moves_a_category_column_as_a_whole(category_run):
    tree, prepared, _ = category_run
    X = prepared.X
    blue = next(i for i in range(len(X)) if X[i, 2] == "blue" and np.isfinite(X[i, 0]))
    now = tree.predict(X[blue][None])[0]
    answer = what_if.ask(tree, X[blue], (now + 3, None), encoding=prepared.encoding, reference=X[:200],
                         locked=["income", "age"], min_support=0)
    change = next(c for c in answer.result.changes if c.feature == "colour")
    assert change.change is None and change.now == "blue" and change.needed == "red"
    assert answer.sentence.startswith("Switch colour from 'blue' to 'red': predicted")


def test_a_row_with_an_unseen_category_and_a_blank_is_explained_and_scored(category_run):
    tree, prepared, _ = category_run
    upload = pd.DataFrame({"income": [50.0, None], "age": [40, 41], "colour": ["purple", None]})
    rows = explain.rows_to_X(tree, upload, prepared.encoding)
    assert not rows.problems
    scored = explain.scored_table(tree, upload, rows)
    assert scored["prediction"].notna().all()
    assert explain.explain_row(tree, rows.X[0])["prediction"] == pytest.approx(tree.predict(rows.X[:1])[0])
    bare = explain.rows_to_X(tree, upload)  # a model file without the run's encoding reads the same raw columns
    assert np.array_equal(tree.predict(bare.X), tree.predict(rows.X))
