"""The estimators on tables as they come (issue 47): missing values and category columns are learned inside the
tree, never dropped or refused; a plain table of finite numbers trains as before."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.data.columns import DataError
from get_core.estimator import GETClassifier, GETClassifierCV, GETRegressor, GETRegressorCV

TINY = dict(depth=2, n_starts=2, n_epochs=20, random_state=0)


def table(n: int = 240, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Numbers with holes, a text column, a pandas category column, numbers written as text and a boolean."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "income": rng.normal(50, 10, n),
        "colour": rng.choice(["red", "green", "blue"], n).astype(object),
        "grade": pd.Categorical(rng.choice(["A", "B", "C"], n)),
        "rooms": rng.integers(1, 6, n).astype(str).astype(object),
        "garden": rng.random(n) > 0.5,
    })
    y = 0.1 * X["income"].to_numpy() + 3.0 * (X["colour"] == "red").to_numpy() + rng.normal(0, 0.1, n)
    X.loc[rng.random(n) < 0.15, "income"] = np.nan
    X.loc[rng.random(n) < 0.1, "colour"] = None
    return X, y


@pytest.fixture(scope="module")
def fitted() -> GETRegressor:
    X, y = table()
    return GETRegressor(**TINY).fit(X, y)


def test_from_dtype_reads_text_and_category_columns_as_categories_and_numbers_written_as_text_as_numbers(fitted):
    kinds = {c.name: (c.kind, c.missing) for c in fitted.tree_.inputs.columns}
    assert kinds == {"income": ("number", True), "colour": ("category", True), "grade": ("category", False),
                     "rooms": ("number", False), "garden": ("number", False)}
    assert fitted.n_features_in_ == 5 and list(fitted.feature_names_in_) == list(kinds)
    assert fitted.tree_.n_samples[0] == 240  # no row dropped
    assert fitted.score(*table()) > 0.5


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, np.nan, np.inf, -np.inf, 3.5, 1e6]),
                          st.sampled_from(["red", "purple", "", None, " blue ", 7]),
                          st.sampled_from(["A", "Z", None]), st.sampled_from(["2", "", None, "4.0"]),
                          st.sampled_from([True, False, None])), min_size=1, max_size=8))
def test_any_pattern_of_missing_infinite_blank_or_unseen_values_predicts_every_row(fitted, rows):
    X = pd.DataFrame(rows, columns=["income", "colour", "grade", "rooms", "garden"])
    predicted = fitted.predict(X)
    assert predicted.shape == (len(rows),) and np.isfinite(predicted).all()
    np.testing.assert_array_equal(fitted.apply(X), fitted.tree_.apply(X))
    assert fitted.decision_path(X).shape == (len(rows), 3)


def test_a_missing_value_in_a_column_never_missing_in_training_counts_as_its_training_mean(fitted):
    X = table()[0].head(3).copy()
    X["rooms"] = None
    mean = fitted.tree_.inputs.columns[3].fill
    np.testing.assert_array_equal(fitted.predict(X), fitted.predict(X.assign(rooms=mean)))


def test_an_unseen_category_and_a_missing_one_where_training_had_none_add_nothing(fitted):
    X = table()[0].head(4).copy()
    encoded = fitted.tree_.encode(X.assign(grade=["Z", None, "", "A"]))
    grade = [j for j, name in enumerate(fitted.tree_.feature_names) if name.startswith("grade=")]
    np.testing.assert_array_equal(encoded[:, grade], [[0, 0, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0]])


@pytest.mark.parametrize("categorical_features", [[1, 2], ["colour", "grade"], [False, True, True, False, False]])
def test_categorical_features_takes_indices_names_or_a_mask(categorical_features):
    X, y = table(120)
    model = GETRegressor(**TINY, categorical_features=categorical_features).fit(X, y)
    assert [c.kind for c in model.tree_.inputs.columns] == ["number", "category", "category", "number", "number"]


def test_categorical_features_none_and_a_numeric_array_with_a_category_column():
    X, y = table(120)
    with pytest.raises(DataError, match="Column 'colour' holds numbers, but row 1 holds"):
        GETRegressor(**TINY, categorical_features=None).fit(X, y)
    codes = np.column_stack([np.arange(120) % 3, np.linspace(0, 1, 120)])
    model = GETRegressor(**TINY, categorical_features=[0]).fit(codes, y)
    assert model.tree_.inputs.columns[0].categories == ("0", "1", "2")
    assert model.predict(codes).shape == (120,)


@pytest.mark.parametrize("categorical_features, message", [
    (["nope"], "names 'nope', which is not a column of X"),
    ([True, False], "boolean mask needs 5 entries"),
    ([9], "give column indices from 0 to 4"),
])
def test_a_bad_categorical_features_is_one_sentence(categorical_features, message):
    with pytest.raises(DataError, match=message):
        GETRegressor(**TINY, categorical_features=categorical_features).fit(*table(60))


def test_more_categories_than_the_cap_is_refused_by_name():
    X = pd.DataFrame({"city": [f"c{i}" for i in range(300)], "x": np.arange(300.0)})
    with pytest.raises(DataError, match="Column 'city' has 300 categories; GET takes at most 255"):
        GETRegressor(**TINY).fit(X, np.arange(300.0))


def test_a_plain_table_trains_as_before_and_nan_at_predict_goes_left_where_a_split_uses_it():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3))
    y = X[:, 0] + X[:, 1]
    model = GETRegressor(**TINY).fit(X, y)
    assert model.tree_.inputs is None
    same = GETRegressor(**TINY, categorical_features=None).fit(X, y)
    np.testing.assert_array_equal(model.tree_.weights, same.tree_.weights)
    row = np.array([[np.nan, 0.0, 0.0]])
    assert model.tree_.weights[0, 0] != 0  # the root uses x0: a NaN term makes its sum NaN, "not greater": left
    assert model.predict(row).shape == (1,) and model.decision_path(row)[0, 1] == 2


def test_nan_in_training_numbers_is_learned_and_max_split_features_counts_a_category_once():
    X, y = table(200)
    model = GETRegressor(**{**TINY, "n_epochs": 40}, max_split_features=1).fit(X, y)
    tree = model.tree_
    assert tree.split_terms.max() <= 1
    assert (tree.split_widths >= tree.split_terms).all()


def test_the_classifier_and_the_searches_take_raw_tables():
    X, y = table(150)
    labels = np.where(y > np.median(y), "high", "low")
    classifier = GETClassifier(**TINY).fit(X, labels)
    assert set(classifier.predict(X)) <= {"high", "low"}
    assert classifier.predict_proba(X.head(2)).shape == (2, 2)
    search = GETRegressorCV(depths=(1, 2), n_starts=2, n_epochs=20, random_state=0).fit(X, y)
    assert search.tree_.inputs is not None and all(t.inputs is not None for t in search.search_trees_)
    assert search.predict(X).shape == (150,)
    class_search = GETClassifierCV(depths=(1,), n_starts=2, n_epochs=20, random_state=0).fit(X, labels)
    assert class_search.score(X, labels) > 0.5


def test_a_boolean_category_column_reads_the_same_from_a_table_a_list_and_the_python_export():
    import types

    from get_core.model.codegen import python_source

    rng = np.random.default_rng(2)
    X = pd.DataFrame({"flag": rng.random(80) > 0.5, "x": rng.normal(size=80),
                      "maybe": pd.array(rng.random(80) > 0.5, dtype="boolean")})
    X.loc[3, "maybe"] = pd.NA
    model = GETRegressor(**TINY, categorical_features=["flag", "maybe"]).fit(X, X["x"] + 2 * X["flag"])
    assert model.tree_.inputs.columns[0].categories == ("False", "True")
    rows = [[bool(r.flag), float(r.x), None if r.maybe is pd.NA else bool(r.maybe)] for r in X.itertuples(index=False)]
    module = types.ModuleType("exported")
    exec(python_source(model.tree_), module.__dict__)
    assert [module.predict(row) for row in rows] == model.predict(X).tolist() == model.tree_.predict(rows).tolist()


def test_rare_holes_and_levels_fit_without_a_false_outlier_warning_and_a_far_number_is_named():
    """A 0/1 "is missing" or category column is packed near 0 by nature: only number columns are checked for far
    outliers, and the warning names the raw column (engine columns outnumber raw ones: no index past them)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300),
                      "c": pd.Categorical(rng.choice(["u", "v"], size=300, p=[0.99, 0.01]))})
    X.loc[:4, "b"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GETRegressor(depth=1, n_starts=1, n_epochs=5, random_state=0).fit(X, X["a"].to_numpy())
    X["d"] = rng.normal(size=300)
    X.loc[7, "d"] = 1e6
    with pytest.warns(UserWarning, match=r"Far outliers in 1 feature\(s\) \(d\)"):
        GETRegressor(depth=1, n_starts=1, n_epochs=5, random_state=0).fit(X, X["a"].to_numpy())


@pytest.mark.parametrize("make", [lambda: GETRegressor(depth=1, leaf="linear", n_starts=1, n_epochs=5, random_state=0),
                                  lambda: GETClassifier(depth=1, leaf="logistic", n_starts=1, n_epochs=5,
                                                        random_state=0)])
def test_a_plain_tree_with_leaf_models_refuses_a_missing_value_in_a_sentence_instead_of_predicting_nan(make):
    """Splits send a NaN left, but a linear or logistic leaf would predict NaN from it: a sentence names the row."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    model = make().fit(X, (X[:, 0] + X[:, 1] > 0).astype(int))
    rows = X[:3].copy()
    rows[1, 2] = np.nan
    with pytest.raises(DataError, match=r"a missing value in column 'x2' \(row 1\)"):
        model.predict(rows)
    rows[1, 2] = np.inf
    with pytest.raises(DataError, match=r"an infinite value in column 'x2' \(row 1\)"):
        model.predict(rows)
    assert np.all(np.isfinite(model.predict(X[:3].astype(float))))
