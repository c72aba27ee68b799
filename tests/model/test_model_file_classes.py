"""The model file's version 3: classification trees round-trip exactly; version 2 files written before it (a
regression tree, kept as a fixture) still load; a class field at fault is refused by name."""

import json
from pathlib import Path

import numpy as np
import pytest

from get_core.model import model_file
from get_core.model.model_file import ModelFormatError
from tests.trees import class_stump, make_class_tree, make_tree

VERSION_2 = Path(__file__).parent / "fixtures" / "version2_linear.json"


def test_a_version_2_file_written_before_classification_loads_and_predicts_as_it_did():
    text = VERSION_2.read_text(encoding="utf-8")
    assert json.loads(text)["version"] == 2
    old = model_file.load_model_json(text)
    tree, X, _ = make_tree(depth=2, p=3, leaf="linear", seed=3, names=["temp °C", "pressure", 'a "quoted" name'])
    assert not old.is_classifier and old.meta == {"config": {"depth": 2, "leaf": "linear"}}
    np.testing.assert_array_equal(old.predict(X), tree.predict(X))
    np.testing.assert_array_equal(old.leaf_lower, tree.leaf_lower)
    again = json.loads(model_file.model_json(old))
    assert again["version"] == 3 and not set(model_file.CLASS_FIELDS) & set(again)


@pytest.mark.parametrize("labels", [["no", "yes", "maybe"], [0, 1], [True, False], [1.5, 2.0, -3.25]])
def test_a_classification_tree_round_trips_exactly_with_its_labels_type(labels):
    tree, X, _ = make_class_tree(depth=3, labels=labels, seed=4, empty_subtree=True)
    loaded = model_file.load_model_json(model_file.model_json(tree, indent=1))
    assert loaded.is_classifier and loaded.classes == tree.classes
    assert [type(c) for c in loaded.classes] == [type(c) for c in tree.classes]
    np.testing.assert_array_equal(loaded.leaf_proba, tree.leaf_proba)
    np.testing.assert_array_equal(loaded.node_counts, tree.node_counts)
    assert np.isnan(loaded.node_values).sum() == np.isnan(tree.node_values).sum() > 0
    np.testing.assert_array_equal(loaded.predict(X), tree.predict(X))
    assert loaded.predict(X).dtype == tree.predict(X).dtype
    np.testing.assert_array_equal(loaded.predict_proba(X), tree.predict_proba(X))


def _edited(**changes) -> dict:
    data = json.loads(model_file.model_json(class_stump()))
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("changes, message", [
    ({"classes": None}, "'classes' must be a non-empty list"),
    ({"classes": []}, "'classes' must be a non-empty list"),
    ({"classes": ["bad", None]}, "'classes' must be a non-empty list"),
    ({"classes": [1, 2 ** 70]}, "integers within 64 bits"),
    ({"classes": [["bad"], ["good"]]}, "'classes' must be a non-empty list"),
    ({"classes": ["good", "bad"]}, "inconsistent: classes must be distinct and sorted"),
    ({"classes": ["bad", 1]}, "inconsistent: classes must all be"),
    ({"leaf_proba": None}, "'leaf_proba' is missing"),
    ({"leaf_proba": [[0.8, 0.2]]}, r"'leaf_proba' must have shape \(2, 2\)"),
    ({"leaf_proba": [[0.8, 0.3], [0.25, 0.75]]}, "inconsistent: leaf_proba must hold probabilities"),
    ({"node_counts": [[5, 4], [4, 1], [1, "3"]]}, "'node_counts' must be a list of numbers"),
    ({"node_counts": [[5, 4], [4, -1], [1, 3]]}, "inconsistent: node_counts must hold"),
    ({"leaf_intercepts": [0.0, 1.0]}, "inconsistent: A classification tree keeps leaf_intercepts"),
    ({"version": 2}, "leaf_type' must be one of .* in a version 2 model"),
])
def test_a_class_field_at_fault_is_refused_by_name(changes, message):
    with pytest.raises(ModelFormatError, match=message):
        model_file.load_model_json(json.dumps(_edited(**changes)))


def test_a_regression_file_holding_class_fields_is_refused():
    data = json.loads(model_file.model_json(make_tree(depth=1)[0]))
    data["classes"] = ["a", "b"]
    with pytest.raises(ModelFormatError, match="'classes' belongs to a classification tree"):
        model_file.from_dict(data)
