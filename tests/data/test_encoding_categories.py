"""get_core.data.encoding's category columns handed to the estimators as categories (``one_hot`` False, the Data
page's default): raw labels in X, one group per column in the tree, one-hot numbers for the baselines, and stored
one-hot encodings read as before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.data.columns import DataError
from get_core.data.encoding import DataSpec, Encoding, category_note, kept_missing_note, model_frame, prepare
from get_core.estimator import GETRegressor
from get_core.model.inputs import RULES


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 60
    table = pd.DataFrame({"temp": rng.normal(20, 5, n).round(3), "colour": rng.choice(["red", "green", "blue"], n),
                          "code": rng.choice([1, 2, 3], n), "y": rng.normal(size=n).round(4)})
    table.loc[[3, 7], "temp"] = np.nan
    table.loc[[4], "colour"] = None
    return table


def _spec(missing: str = "keep", one_hot: bool = False) -> DataSpec:
    return DataSpec(target="y", features=("temp", "colour", "code"), categorical=("code",), missing=missing,
                    one_hot=one_hot)


def test_category_columns_reach_x_as_their_labels_and_numbers_as_floats(table):
    prepared = prepare(table, _spec())
    encoding = prepared.encoding
    assert not encoding.one_hot and prepared.feature_names == ["temp", "colour", "code"]
    assert prepared.X.dtype == object and prepared.X.shape == (60, 3)
    assert prepared.X[4, 1] is None and np.isnan(prepared.X[3, 0])  # holes kept, no row lost
    assert set(prepared.X[:, 2]) == {"1", "2", "3"} and encoding.categories["code"] == ("1", "2", "3")
    assert prepared.n_inputs == 1 + 3 + 3  # what training time depends on: one per level
    frame = model_frame(prepared.X, prepared.feature_names)
    assert [str(t) for t in frame.dtypes] == ["float64", "category", "category"]  # '1', '2' stay categories


def test_the_estimator_makes_each_category_column_one_group(table):
    prepared = prepare(table, _spec())
    fitted = GETRegressor(depth=1, n_starts=1, n_epochs=5, random_state=0).fit(
        model_frame(prepared.X, prepared.feature_names), prepared.y)
    kinds = [(c.name, c.kind, c.categories) for c in fitted.inputs_.columns]
    assert kinds == [("temp", "number", ()), ("colour", "category", ("blue", "green", "red")),
                     ("code", "category", ("1", "2", "3"))]
    assert np.allclose(fitted.tree_.predict(prepared.X), fitted.predict(model_frame(prepared.X, prepared.feature_names)))


def test_the_baselines_get_the_one_hot_twins_numbers(table):
    prepared = prepare(table, _spec())
    one_hot = prepare(table, _spec(one_hot=True))
    assert prepared.encoding.baseline_names == one_hot.encoding.feature_names
    assert np.array_equal(prepared.numbers, one_hot.X, equal_nan=True)
    assert one_hot.encoding.for_baselines(one_hot.X) is one_hot.X


def test_an_encoding_of_categories_reads_back_from_its_json_and_old_ones_are_unchanged(table):
    for missing in ("keep", "impute", "drop"):
        encoding = prepare(table, _spec(missing)).encoding
        assert Encoding.from_json(encoding.to_dict()) == encoding and encoding.to_dict()["one_hot"] is False
    old = prepare(table, _spec(one_hot=True)).encoding.to_dict()
    assert "one_hot" not in old and Encoding.from_json(old).one_hot  # runs stored before: one-hot, as written
    assert "one_hot" not in _spec(one_hot=True).to_dict() and DataSpec.from_dict(_spec().to_dict()) == _spec()
    assert DataSpec.from_dict({"target": "y", "features": ["temp"]}).one_hot  # a spec stored before
    data = prepare(table, _spec()).encoding.to_dict()
    with pytest.raises(ValueError, match="'feature_names' must repeat 'columns'"):
        Encoding.from_json({**data, "feature_names": ["temp", "colour=blue"]})
    with pytest.raises(ValueError, match="'one_hot' must be true or false"):
        Encoding.from_json({**data, "one_hot": "no"})


def test_new_rows_keep_an_unseen_level_and_a_blank_as_the_tree_reads_them(table):
    encoding = prepare(table, _spec()).encoding
    rows = pd.DataFrame({"temp": [1.0, None, 2.0], "colour": ["purple", "red", " "], "code": [2, 4, None]})
    X, problems = encoding.encode(rows)
    assert not problems
    assert X[0].tolist()[1:] == ["purple", "2"] and X[1, 1] == "red" and X[2, 1] is None and X[2, 2] is None
    assert encoding.unseen_levels(rows) == {"colour": (1, ("purple",)), "code": (1, ("4",))}
    assert encoding.for_baselines(X)[0, 1:4].tolist() == [0.0, 0.0, 0.0]  # unseen: no indicator
    imputed = prepare(table, _spec("impute")).encoding
    filled, problems = imputed.encode(rows)  # only columns with holes in training have a fill
    assert problems == {2: "'code' is empty"} and np.isfinite(filled[1, 0])
    blank = imputed.transform(pd.DataFrame({"temp": [1.0], "colour": [" "], "code": [2]}))
    assert blank[0, 1] == imputed.impute["colour"]
    dropped = prepare(table, _spec("drop")).encoding
    assert dropped.encode(rows)[1] == {1: "'temp' is empty", 2: "'colour' is empty"}


def test_the_data_page_says_what_the_tree_does_with_categories_and_holes_in_the_rules_words(table):
    prepared = prepare(table, _spec())
    assert category_note(prepared) == f"Categories ('colour' and 'code'): {RULES['category']}; {RULES['unseen']}."
    assert kept_missing_note(prepared).endswith(RULES["missing"] + ".")
    assert category_note(prepare(table, _spec(one_hot=True))) is None


def test_a_category_column_with_too_many_values_is_refused_in_a_sentence(table):
    table["id"] = [f"id{i}" for i in range(len(table))]
    table["code"] = np.arange(len(table)) % 40
    with pytest.raises(DataError, match="'code' has 40 distinct values; a categorical column may have at most 30"):
        prepare(table, _spec())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([None, "", " ", "red", "blue", "Red", "1", "1.0", "nan"]), min_size=6, max_size=6))
def test_any_pattern_of_blanks_and_unseen_labels_is_scored_without_a_refusal(colours):
    rng = np.random.default_rng(1)
    table = pd.DataFrame({"temp": rng.normal(size=30), "colour": ["red", "blue", "green"] * 10,
                          "y": rng.normal(size=30)})
    encoding = prepare(table, DataSpec(target="y", features=("temp", "colour"), missing="keep",
                                       one_hot=False)).encoding
    X, problems = encoding.encode(pd.DataFrame({"temp": np.zeros(6), "colour": colours}))
    assert not problems and X.shape == (6, 2)
    numbers = encoding.for_baselines(X)
    assert numbers.shape == (6, 4) and set(numbers[:, 1:].sum(axis=1)) <= {0.0, 1.0}
    assert [x is None for x in X[:, 1]] == [c is None or not c.strip() for c in colours]
