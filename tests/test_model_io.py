"""The model's input/output surface: model files that are edited or inconsistent, and the tables a tree scores."""

import numpy as np
import pandas as pd
import pytest

from get_core.model import codegen, model_file

from get_core import export
from tests.trees import make_tree


def test_a_linear_tree_leaf_that_holds_a_constant_shows_the_value_predict_gives():
    tree, X, _ = make_tree(depth=1, p=2, leaf="linear", seed=4)
    tree.leaf_coefs[0] = 0.0  # the leaf holds its mean (GCV), and its bounds exclude that mean
    tree.leaf_intercepts[0], tree.leaf_lower[0], tree.leaf_upper[0] = 0.5, 0.6, 0.9
    loaded = model_file.load_model_json(model_file.model_json(tree))
    row = X[loaded.apply(X) == 2][:1]
    predicted = loaded.predict(row)[0]
    assert predicted == loaded.y_min + loaded.y_scale * 0.6
    assert loaded.leaf_in_original_units(2)[0] == predicted
    assert f"return {predicted:.4g}  # leaf 2" in export.rules_text(loaded)
    namespace: dict = {}
    exec(codegen.python_source(loaded), namespace)
    assert namespace["predict"](list(row[0])) == predicted


def test_a_table_is_read_by_column_name_so_reordered_or_missing_columns_are_refused():
    tree, X, _ = make_tree(depth=2, p=3, names=["a", "b", "c"])
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    np.testing.assert_array_equal(tree.predict(frame), tree.predict(X))
    for bad, why in [(frame[["c", "b", "a"]], "another order"), (frame[["a", "b"]], "missing 'c'"),
                     (frame.rename(columns={"c": "d"}), "not in the model 'd'"),
                     (frame.assign(d=1.0), "not in the model 'd'")]:
        with pytest.raises(ValueError, match=why):
            tree.predict(bad)
        with pytest.raises(ValueError, match=why):
            tree.apply(bad)


def test_a_tree_fitted_without_names_reads_a_table_by_position():
    tree, X, _ = make_tree(depth=2, p=3)  # names x0, x1, x2
    np.testing.assert_array_equal(tree.predict(pd.DataFrame(X)), tree.predict(X))
    with pytest.raises(ValueError, match="another order"):
        tree.predict(pd.DataFrame(X, columns=["x2", "x1", "x0"]))
