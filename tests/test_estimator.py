"""GETRegressor follows scikit-learn's estimator contract (check_estimator is the judge) with tiny budgets."""

import warnings
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from get_core import GETRegressor, GETRegressorCV
from get_core.config import DEFAULTS, GETConfig
from get_core.data.columns import DataError


@parametrize_with_checks([GETRegressor(depth=2, n_starts=2, n_epochs=4, random_state=0),
                          GETRegressor(depth=2, leaf="linear", n_starts=2, n_epochs=4, random_state=0),
                          GETRegressorCV(depths=(1, 2), n_starts=2, n_epochs=4, random_state=0)],
                         expected_failed_checks=lambda estimator: {
                             "check_sample_weight_equivalence_on_dense_data":
                             "random starts depend on the row count (tests/test_classifier.py tests the weights)"})
def test_sklearn_estimator_contract(estimator, check):
    check(estimator)


def test_same_random_state_gives_the_same_tree():
    rng = np.random.default_rng(0)
    X, y = rng.random((300, 4)), rng.random(300)
    a = GETRegressor(depth=3, n_starts=3, n_epochs=30, random_state=7).fit(X, y).tree_
    b = GETRegressor(depth=3, n_starts=3, n_epochs=30, random_state=7).fit(X, y).tree_
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.leaf_intercepts, b.leaf_intercepts)


def test_pandas_input_keeps_feature_names_in_the_tree():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.random((120, 3)), columns=["temp", "pressure", "flow"])
    model = GETRegressor(depth=2, n_starts=2, n_epochs=10, random_state=0).fit(X, X["temp"] * 2)
    assert list(model.feature_names_in_) == ["temp", "pressure", "flow"]
    assert model.tree_.feature_names == ["temp", "pressure", "flow"]
    with pytest.raises(ValueError):
        model.predict(X[["flow", "temp", "pressure"]])


@pytest.mark.parametrize("clip", [True, False])
def test_linear_leaves_never_extrapolate_beyond_their_training_targets_when_clipped(clip):
    """Planted: y = 3x inside [0, 1]; rows at x = 5 would get a line's 15. Clipped leaves stay within the targets
    their leaf saw, unclipped ones follow their line."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(200, 2))
    y = 3 * X[:, 0] + rng.normal(scale=0.01, size=200)
    model = GETRegressor(depth=1, leaf="linear", n_starts=1, n_epochs=5, random_state=0, clip_leaves=clip).fit(X, y)
    far = np.array([[5.0, 0.5], [-4.0, 0.5]])
    pred = model.predict(far)
    if clip:
        assert y.min() <= pred.min() and pred.max() <= y.max()
        assert model.tree_.has_leaf_bounds
    else:
        assert pred.max() > 10 and pred.min() < -8 and not model.tree_.has_leaf_bounds
    np.testing.assert_allclose(model.predict(X), model.tree_.predict(X))
    assert model.score(X, y) > 0.99


@pytest.mark.parametrize("depths", [[1.7, 2.2], [0, 2], [2, 13], [True, 2], []])
def test_depth_search_refuses_depths_that_are_not_whole_numbers_from_1_to_12(depths):
    X, y = np.random.default_rng(0).random((40, 2)), np.arange(40.0)
    with pytest.raises(ValueError, match="depths must be integers from 1 to 12"):
        GETRegressorCV(depths=depths, n_starts=1, n_epochs=2).fit(X, y)


@pytest.mark.parametrize("estimator, name", [
    (GETRegressor, "depth"), (GETRegressor, "n_starts"), (GETRegressor, "n_epochs"), (GETRegressor, "n_alphas"),
    (GETRegressor, "learning_rate"), (GETRegressor, "l1"), (GETRegressor, "random_state"),
    (GETRegressorCV, "patience"), (GETRegressorCV, "tol"), (GETRegressorCV, "l1"),
])
def test_a_boolean_is_refused_where_a_number_is_expected(estimator, name):
    X, y = np.random.default_rng(0).random((40, 2)), np.arange(40.0)
    with pytest.raises(ValueError, match=f"The '{name}' parameter of {estimator.__name__} must be .* Got True"):
        estimator(**{"n_starts": 1, "n_epochs": 2, name: True}).fit(X, y)
    with pytest.raises(ValueError, match="depth must be an integer from 1 to 12; got True"):
        GETConfig(depth=True).validate()


@pytest.mark.parametrize("estimator", [GETRegressor, GETRegressorCV])
def test_values_too_large_to_scale_are_refused_naming_the_column(estimator):
    X = pd.DataFrame(np.random.default_rng(0).random((40, 2)), columns=["a", "b"])
    y = np.arange(40.0)
    y[[3, 4]] = 1e308, -1e308  # the range overflows: "Input y contains NaN" came from inside the CART start
    with pytest.raises(DataError, match="Target 'y' is 1e\\+308, beyond ±1e\\+150 .* in row 3"):
        estimator(n_starts=1, n_epochs=2).fit(X, y)
    X.loc[5, "b"] = -1e308  # an infinite feature scale that the model file could not hold
    with pytest.raises(DataError, match="Feature 'b' is -1e\\+308, beyond ±1e\\+150 .* in row 5"):
        estimator(n_starts=1, n_epochs=2).fit(X, np.arange(40.0))


@pytest.mark.parametrize("make_X, y_part, message", [
    (lambda X: pd.DataFrame({"a": X[:, 0] + 1j, "b": X[:, 1]}), 0, "X's column 'a' holds complex numbers"),
    (lambda X: X + 0j, 0, "X holds complex numbers"),
    (lambda X: X, 1j, "y holds complex numbers"),
    (lambda X: pd.DataFrame(X, columns=["a", "a"]), 0, "'a' appears more than once"),
    (lambda X: pd.DataFrame(X, columns=pd.Index(["a", "\udcff"], dtype=object)), 0, "'\\\\udcff' holds a lone"),
])
def test_fit_refuses_complex_data_and_column_names_no_file_can_hold(make_X, y_part, message):
    X = np.random.default_rng(0).random((40, 2))
    with pytest.raises(DataError, match=message):
        GETRegressor(n_starts=1, n_epochs=2).fit(make_X(X), np.arange(40.0) + y_part)


def test_depth_search_takes_numpy_integers_and_searches_each_depth_once():
    X, y = np.random.default_rng(0).random((60, 2)), np.arange(60.0)
    cv = GETRegressorCV(depths=np.array([2, 1, 2]), n_starts=1, n_epochs=2, patience=5, random_state=0).fit(X, y)
    assert [r["depth"] for r in cv.cv_results_] == [1, 2]


def test_fit_warns_by_name_when_min_max_squeezes_a_feature_and_not_with_robust_scaling():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"income": rng.uniform(10, 90, 100), "age": rng.uniform(20, 70, 100)})
    X.loc[3, "income"] = 99999
    y = X["age"].to_numpy()
    with pytest.warns(UserWarning, match=r"Far outliers in 1 feature\(s\) \(income\).*scaling='robust'"):
        GETRegressor(depth=1, n_starts=1, n_epochs=2, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GETRegressor(depth=1, n_starts=1, n_epochs=2, random_state=0, scaling="robust").fit(X, y)
        GETRegressor(depth=1, n_starts=1, n_epochs=2, random_state=0).fit(X.drop(index=3), np.delete(y, 3))


@pytest.mark.parametrize("estimator", [GETRegressor, GETRegressorCV])
def test_both_estimators_take_their_shared_defaults_and_constraints_from_the_config(estimator):
    params = estimator().get_params()
    shared = {f.name for f in fields(GETConfig)} & set(params)
    assert {"leaf", "n_starts", "n_epochs", "alpha_range", "learning_rate", "scaling"} <= shared
    assert {name: params[name] for name in shared} == {name: getattr(DEFAULTS, name) for name in shared}
    assert set(estimator._parameter_constraints) == set(params)


@pytest.mark.parametrize("estimator", [GETRegressor(n_starts=1, n_epochs=5), GETRegressorCV(depths=[1], n_starts=1,
                                                                                            n_epochs=5)])
@pytest.mark.parametrize("y", [np.array(["low", "high"] * 10), pd.Series(["a", "b"] * 10, dtype="category"),
                               pd.Series(["1.5"] * 19 + ["n/a"], dtype=object)])
def test_a_text_target_is_refused_with_a_sentence_that_names_the_classifier(estimator, y):
    X = np.random.default_rng(0).random((20, 2))
    with pytest.raises(DataError, match=r"y \(the target\) is text: row \d+ holds .*use GETClassifier for classes"):
        estimator.fit(X, y)


def test_a_target_of_numbers_written_as_text_still_fits():
    X = np.random.default_rng(0).random((20, 2))
    model = GETRegressor(depth=1, n_starts=1, n_epochs=5).fit(X, pd.Series(["1.5", "2"] * 10, dtype=object))
    predictions = model.predict(X)
    assert predictions.dtype == np.float64 and np.all((predictions >= 1.5) & (predictions <= 2.0))


@pytest.mark.parametrize("as_text", [lambda y: y.astype(str), lambda y: y.astype(str).astype(object),
                                     lambda y: pd.Series(y.astype(str), dtype="string")])
def test_numbers_written_as_text_train_as_those_numbers(as_text):
    """``GETRegressor().fit(X, y.astype(str))`` raised numpy's UFuncTypeError."""
    rng = np.random.default_rng(1)
    X, y = rng.random((60, 2)), rng.normal(size=60) * 1e3
    settings = dict(depth=1, n_starts=1, n_epochs=3, random_state=0)
    text = GETRegressor(**settings).fit(X, as_text(y))
    np.testing.assert_array_equal(text.predict(X), GETRegressor(**settings).fit(X, y).predict(X))
