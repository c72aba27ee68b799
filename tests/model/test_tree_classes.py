"""ObliqueTree's classification leaves: labels, probabilities, parameters and the checks on what it is given."""

import dataclasses

import numpy as np
import pytest

from get_core.model.tree import ObliqueTree
from tests.trees import class_stump, make_class_tree, make_tree


def loop_labels(tree: ObliqueTree, X: np.ndarray) -> tuple[list, np.ndarray]:
    """One row at a time: walk to the leaf, take the first class with the largest probability."""
    labels, proba = [], []
    for leaf in tree.apply(X):
        row = tree.leaf_proba[leaf - tree.n_leaves]
        best = max(range(len(row)), key=lambda k: (row[k], -k))
        labels.append(tree.classes[best])
        proba.append(row)
    return labels, np.array(proba)


@pytest.mark.parametrize("labels", [None, [3, 1, 7], [False, True], [0.5, -2.0], ["é", "b", "a b"]])
@pytest.mark.parametrize("depth", [1, 3])
def test_predict_gives_the_leaf_majority_label_in_the_labels_own_type(labels, depth):
    tree, X, y = make_class_tree(depth=depth, labels=labels, seed=depth)
    want_labels, want_proba = loop_labels(tree, X)
    got = tree.predict(X)
    assert got.tolist() == want_labels
    assert got.dtype.kind == np.asarray(tree.classes).dtype.kind == np.asarray(y).dtype.kind
    np.testing.assert_array_equal(tree.predict_proba(X), want_proba)
    assert tree.predict_proba(X).dtype == np.float64
    assert tree.is_classifier and tree.n_classes == len(tree.classes)
    assert np.mean(got == y) > 0.6  # the leaves were made to hold mostly one class


def test_a_tie_goes_to_the_first_class_and_routing_is_the_regression_trees():
    tree = class_stump()
    tree.leaf_proba[0] = [0.5, 0.5]
    rows = np.array([[0.0, 0.0], [5.0, 0.0], [np.nan, 0.0]])
    assert tree.predict(rows).tolist() == ["bad", "good", "bad"]
    np.testing.assert_array_equal(tree.predict_proba(rows), [[0.5, 0.5], [0.25, 0.75], [0.5, 0.5]])
    np.testing.assert_array_equal(tree.apply(rows), [2, 3, 2])
    assert tree.node_class_index(1) == 0 and tree.node_class_index(3) == 1


def test_numpy_labels_become_plain_python_scalars_and_an_empty_batch_keeps_the_type():
    tree, X, _ = make_class_tree(labels=np.array([2, 5]))
    assert all(type(c) is int for c in tree.classes)
    assert tree.predict(X[:0]).shape == (0,) and tree.predict(X[:0]).dtype.kind == "i"
    assert tree.predict_proba(X[:0]).shape == (0, 2)


def test_parameters_count_c_minus_1_free_shares_per_leaf():
    three, _, _ = make_class_tree(depth=3, p=4, n_classes=3)
    two, _, _ = make_class_tree(depth=3, p=4, n_classes=2)
    constant, _, _ = make_tree(depth=3, p=4)
    assert three.n_parameters == 7 * 5 + 8 * 2
    assert two.n_parameters == constant.n_parameters == 7 * 5 + 8 * 1


def test_a_leaf_no_row_reaches_predicts_its_parents_shares():
    tree, X, _ = make_class_tree(depth=2, empty_subtree=True)
    assert tree.n_samples[2] == 0 and tree.node_value_original(3) != tree.node_value_original(3)  # NaN
    np.testing.assert_array_equal(tree.leaf_proba[2], tree.leaf_proba[3])


def test_predict_proba_on_a_regression_tree_and_numbers_from_a_classifier_are_clear_errors():
    regression, X, _ = make_tree()
    with pytest.raises(ValueError, match="predict_proba needs a classification tree"):
        regression.predict_proba(X)
    with pytest.raises(ValueError, match="predicts classes, not numbers"):
        class_stump().predict_scaled(X[:, :2])


def _replaced(**changes):
    tree = class_stump()
    fields = {f.name: getattr(tree, f.name) for f in dataclasses.fields(tree)}
    return ObliqueTree(**{**fields, **changes})


@pytest.mark.parametrize("changes, message", [
    ({"classes": None}, "needs classes"),
    ({"leaf_proba": None}, "needs leaf_proba"),
    ({"node_counts": None}, "needs node_counts"),
    ({"classes": []}, "at least one class"),
    ({"classes": ["a", 1]}, "all be text, all integers"),
    ({"classes": [1.0, float("nan")]}, "finite"),
    ({"classes": [[1], [2]]}, "all be text, all integers"),
    ({"classes": ["good", "bad"]}, "sorted as np.unique"),
    ({"classes": ["a", "a"]}, "distinct"),
    ({"classes": ["a", "b", "c"]}, r"leaf_proba must have shape \(2, 3\)"),
    ({"leaf_proba": [[0.5, 0.6], [0.5, 0.5]]}, "summing to 1"),
    ({"leaf_proba": [[1.5, -0.5], [0.5, 0.5]]}, "numbers >= 0"),
    ({"node_counts": [[1, 1], [1, 1]]}, r"node_counts must have shape \(3, 2\)"),
    ({"node_counts": [[1, -1], [1, 1], [0, 0]]}, "counts >= 0"),
    ({"leaf_intercepts": [1.0, 0.0]}, "keeps leaf_intercepts and leaf_coefs at zero"),
    ({"y_scale": 2.0}, "y_scale 1"),
    ({"leaf_type": "constant"}, "A regression tree .* holds no classes"),
    ({"leaf_type": "votes"}, "leaf_type must be one of"),
])
def test_an_inconsistent_classification_tree_is_refused_with_a_sentence(changes, message):
    with pytest.raises(ValueError, match=message):
        _replaced(**changes)
