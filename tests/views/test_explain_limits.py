"""The Predict page's row limit (issue 50): a scored table and its CSV stay within ``explain.SCORED_TABLE_MB``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from get_core.errors import GETExplorerError
from get_core.views import explain
from tests.trees import make_class_tree, make_tree


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(1, 8), classes=st.integers(2, 50), columns=st.integers(1, 200))
def test_a_table_of_the_most_rows_is_scorable_and_one_more_row_is_refused_in_a_sentence(depth, classes, columns):
    tree = make_class_tree(depth=depth, n_classes=classes, n_rows=50 * 2 ** depth)[0]
    most = (explain.SCORED_TABLE_MB << 20) // explain.scored_row_bytes(tree, columns)
    explain.check_scorable(tree, most, columns, "rows.csv")
    with pytest.raises(GETExplorerError, match=rf"^'rows\.csv' has {most + 1:,} rows; with this model "
                                               rf"\({tree.n_classes} classes, depth {depth}\) .* at most {most:,} "
                                               rf"rows at a time: split the file into parts of at most {most:,} "
                                               rf"rows\.$"):
        explain.check_scorable(tree, most + 1, columns, "rows.csv")


def test_a_regression_tree_is_named_as_one_and_scores_more_rows_than_a_50_class_tree():
    regression = make_tree(depth=4, p=3)[0]
    classes = make_class_tree(depth=4, p=3, n_classes=50, n_rows=1_000)[0]
    assert explain.scored_row_bytes(regression, 3) < explain.scored_row_bytes(classes, 3)
    with pytest.raises(GETExplorerError, match=r"\(a regression tree, depth 4\)"):
        explain.check_scorable(regression, 10 ** 6, 3, "rows.csv")
