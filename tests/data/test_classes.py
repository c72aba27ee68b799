"""A class target: recognized from its column, read as labels of its own type, refused in a sentence when a
classifier cannot learn from it, and carried through ``prepare`` and a run's ``Encoding``."""

import numpy as np
import pandas as pd
import pytest

from get_core.data import classes
from get_core.data.columns import DataError
from get_core.data.encoding import DataSpec, Encoding, prepare


def table(target) -> pd.DataFrame:
    n = len(target)
    return pd.DataFrame({"y": target, "x": np.linspace(0, 1, n), "colour": (["red", "blue", None] * n)[:n]})


@pytest.mark.parametrize("values, suggested, ask", [
    (["setosa", "virginica", "versicolor"] * 10, "classification", False),  # text: classes only
    ([True, False] * 15, "classification", True),  # booleans: either
    ([0, 1, 1] * 10, "classification", True),  # few whole numbers: either
    ([1.0, 2.0, 3.0, None] * 8, "classification", True),  # whole numbers read as floats (a blank cell)
    (list(np.linspace(0, 1, 30)), "regression", False),  # many numbers: a number
    (list(range(30)), "regression", False),  # many whole numbers: a number
])
def test_the_target_kind_says_what_the_column_can_be_predicted_as(values, suggested, ask):
    kind = classes.target_kind(pd.Series(values), "y")
    assert (kind.suggested, kind.ask) == (suggested, ask)
    assert "'y'" in kind.reason
    assert bool(kind.counts) == (suggested == "classification")


@pytest.mark.parametrize("values, want, kind", [
    (["b", " a", "b "], ["b", "a", "b"], str), ([True, False, None], [True, False, None], bool),
    ([1.0, 0.0, None], [1, 0, None], int), ([0.5, 1.5, 0.5], [0.5, 1.5, 0.5], float),
    (pd.array([2 ** 60 + 1, 3, None], dtype="Int64"), [2 ** 60 + 1, 3, None], int),
    (["1.0", "2", "x"], ["1", "2", "x"], str),
])
def test_class_labels_keep_one_type_and_spell_text_as_levels_are(values, want, kind):
    labels = classes.class_labels(pd.Series(values))
    assert labels.tolist() == want
    assert all(type(v) is kind for v in labels if v is not None)


def test_prepare_reads_a_class_target_drops_rows_without_one_and_keeps_the_labels_type():
    df = table(["no", "yes", None, "no"] * 8)
    prepared = prepare(df, DataSpec("y", ("x", "colour"), missing="impute", task="classification"))
    assert prepared.n_target_missing == 8 and prepared.y.dtype.kind == "U"
    assert sorted(set(prepared.y)) == ["no", "yes"]
    X, y = prepared.encoding.rows(df, prepared.row_ids)  # a run's rows rebuilt from its stored encoding
    np.testing.assert_array_equal(y, prepared.y)
    again = Encoding.from_json(prepared.encoding.to_dict())
    assert again.task == "classification" and again.rows(df, prepared.row_ids)[1].tolist() == prepared.y.tolist()
    bools = prepare(table([True, False] * 15), DataSpec("y", ("x",), task="classification"))
    assert bools.y.dtype == bool


def test_a_regression_spec_and_encoding_are_written_as_before_so_stored_runs_read_alike():
    spec = DataSpec("y", ("x",))
    assert "task" not in spec.to_dict() and DataSpec.from_dict(spec.to_dict()) == spec
    prepared = prepare(table(list(np.linspace(0, 1, 30))), spec)
    assert "task" not in prepared.encoding.to_dict()
    with pytest.raises(DataError, match="not numeric .* regression"):
        prepare(table(["a", "b"] * 15), spec)


@pytest.mark.parametrize("values, message", [
    (["a"] * 30, "single class \\('a'\\) .* choose another target"),
    (["a", "b"] * 14 + ["c", "d"], "classes 'c', 'd' with a single row: .* merge them into another class"),
    ([f"c{i}" for i in range(51)] * 2, "51 classes; GET Explorer classifies at most 50: group rare classes"),
    ([None] * 30, "is empty"),
    (pd.to_datetime(["2024-01-01", "2024-02-01"] * 15), "holds dates, which are not classes"),
])
def test_a_target_a_classifier_cannot_learn_from_is_refused_with_what_to_do(values, message):
    df = pd.DataFrame({"y": values, "x": np.arange(len(values), dtype=float)})
    with pytest.raises(DataError, match=message):
        prepare(df, DataSpec("y", ("x",), task="classification"))


def test_a_strong_imbalance_is_stated_with_what_always_guessing_scores():
    note = classes.imbalance_note(classes.class_counts(np.array(["ok"] * 98 + ["fraud"] * 2, dtype=object)))
    assert note.startswith("The classes are imbalanced: 'fraud' has 2 rows (2.0%), 'ok' 98 (98.0%).")
    assert "always predicts 'ok' is right 98.0% of the time" in note and "Balanced class weights" in note
    assert classes.imbalance_note(classes.class_counts(np.array(["a"] * 10 + ["b"] * 3, dtype=object))) is None


def test_an_unknown_task_is_refused():
    with pytest.raises(DataError, match="task must be one of"):
        prepare(table(["a", "b"] * 15), DataSpec("y", ("x",), task="ranking"))


def test_a_column_of_one_value_is_not_offered_as_classes_so_prepare_says_it_cannot_be_learned():
    kind = classes.target_kind(pd.Series([3.0] * 30), "y")
    assert (kind.suggested, kind.ask) == ("regression", False)
