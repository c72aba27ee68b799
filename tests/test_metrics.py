"""The one home of R² and RMSE agrees with scikit-learn's definitions, which ``GETRegressor.score`` uses."""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import mean_squared_error, r2_score

from get_core.metrics import r2, scores, search_r2

values = st.floats(-1e6, 1e6, allow_nan=False)
pairs = st.integers(0, 12).flatmap(lambda n: st.tuples(st.lists(values, min_size=n, max_size=n),
                                                       st.lists(values, min_size=n, max_size=n)))


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_the_scores_are_scikit_learns_where_defined_and_none_where_not(pair):
    y, pred = (np.asarray(v, dtype=float) for v in pair)
    got_r2, got_rmse = scores(y, pred)
    if len(y) == 0:
        assert (got_r2, got_rmse) == (None, None)
        return
    assert math.isclose(got_rmse, math.sqrt(mean_squared_error(y, pred)), rel_tol=1e-9, abs_tol=1e-9)
    constant = np.sum((y - y.mean()) ** 2) == 0  # no variance in floating point (a 1e-200 spread squares to 0)
    if len(y) < 2 or constant:
        assert got_r2 is None and r2(y, pred) is None
    else:
        assert math.isclose(got_r2, r2_score(y, pred), rel_tol=1e-9, abs_tol=1e-9)
    if len(y) >= 2:  # scikit-learn warns and gives NaN for one row
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert math.isclose(search_r2(y, pred), r2_score(y, pred), rel_tol=1e-9, abs_tol=1e-9)


def test_a_constant_target_ranks_as_scikit_learn_scores_it():
    y = np.full(5, 2.0)
    assert scores(y, y)[0] is None and search_r2(y, y) == 1.0 == r2_score(y, y)
    assert search_r2(y, y + 0.1) == 0.0 == r2_score(y, y + 0.1)
