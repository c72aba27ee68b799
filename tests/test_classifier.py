"""GETClassifier and GETClassifierCV: scikit-learn's classifier contract (check_estimator is the judge, tiny
budgets), labels of every kind, class and sample weights, and the regressors' sample_weight."""

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.utils.estimator_checks import parametrize_with_checks

from get_core import GETClassifier, GETClassifierCV, GETRegressor, GETRegressorCV
from get_core.config import LIBRARY_MAX_CLASSES
from get_core.data.columns import DataError
from get_core.estimator import with_temperature
from get_core.model import codegen, model_file

#: GET's starts and alphas are random: repeating a row and weighting it are the same loss, not the same draws (n
#: changes which rows the random hyperplanes pass through). Tested below with one (CART) start instead.
STOCHASTIC = {"check_sample_weight_equivalence_on_dense_data":
              "random starts depend on the row count; equivalence is tested with the CART start alone"}


#: The check weights class 0 by 1000 and the others by 0.0001 and expects 87% of predictions to be class 0; scikit-
#: learn's own tree passes only through the min_weight_fraction_leaf=0.01 the check sets. A GET leaf holding only rows
#: of class 1 rightly predicts class 1 (weights scale a class's rows, they do not erase them), and GET has no
#: minimum leaf weight. class_weight is tested below (test_balanced_class_weight_finds_the_rare_class).
LEAF_WEIGHT = {"check_class_weight_classifiers": "no min_weight_fraction_leaf: a leaf of class-1 rows predicts 1"}


def _expected_failures(estimator):
    return {**STOCHASTIC, **(LEAF_WEIGHT if hasattr(estimator, "class_weight") else {})}


@parametrize_with_checks([GETClassifier(depth=2, n_starts=2, n_epochs=4, random_state=0),
                          GETClassifierCV(depths=(1, 2), n_starts=2, n_epochs=4, random_state=0),
                          GETRegressor(depth=2, n_starts=2, n_epochs=4, random_state=0),
                          GETRegressorCV(depths=(1, 2), n_starts=2, n_epochs=4, random_state=0)],
                         expected_failed_checks=_expected_failures)
def test_sklearn_classifier_contract_and_sample_weights(estimator, check):
    check(estimator)


def _blobs(n=240, seed=0, classes=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = np.minimum((X[:, 0] + X[:, 1]) * classes / 2, classes - 1).astype(int)
    return X, y


@pytest.mark.parametrize("labels", [np.array(["low", "mid", "high"]), np.array([-5, 7, 40]),
                                    np.array([0.0, 1.0, 2.0])])
def test_labels_come_back_in_their_own_kind_and_order(labels):
    X, codes = _blobs()
    y = labels[codes]
    model = GETClassifier(depth=2, n_starts=2, n_epochs=30, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.classes_, np.unique(y))
    pred = model.predict(X)
    assert pred.dtype.kind == np.unique(y).dtype.kind
    assert set(pred) <= set(y)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(pred, model.classes_[np.argmax(proba, axis=1)])
    assert model.score(X, y) > 0.8
    np.testing.assert_array_equal(model.tree_.predict(X), pred)  # the model file's predict is the estimator's


def test_boolean_labels_and_a_decision_path_per_row():
    X, codes = _blobs(classes=2)
    model = GETClassifier(depth=2, n_starts=2, n_epochs=30, random_state=0).fit(X, codes == 1)
    assert model.predict(X).dtype == bool
    path = model.decision_path(X)
    assert path.shape == (len(X), 3)
    np.testing.assert_array_equal(path[:, -1], model.apply(X))


def test_balanced_class_weight_finds_the_rare_class():
    rng = np.random.default_rng(3)
    X = rng.random((600, 2))
    clean = (X[:, 0] + 0.5 * X[:, 1] > 1.25).astype(int)  # about 5% positives
    y = clean ^ (rng.random(600) < 0.03)  # label noise drowns the rare class unless it is weighted
    plain = GETClassifier(depth=1, n_starts=2, n_epochs=50, random_state=0).fit(X, y)
    balanced = GETClassifier(depth=1, n_starts=2, n_epochs=50, random_state=0, class_weight="balanced").fit(X, y)
    recall = lambda m: float(np.mean(m.predict(X)[clean == 1] == 1))
    assert recall(balanced) >= recall(plain)
    assert recall(balanced) > 0.6
    as_dict = GETClassifier(depth=1, n_starts=2, n_epochs=50, random_state=0,
                            class_weight={0: 1.0, 1: float(np.sum(y == 0) / np.sum(y == 1))}).fit(X, y)
    assert recall(as_dict) > 0.6


@pytest.mark.parametrize("make", [lambda: GETClassifier(depth=2, n_starts=1, n_epochs=40, random_state=0),
                                  lambda: GETRegressor(depth=2, n_starts=1, n_epochs=40, random_state=0)])
def test_integer_sample_weights_train_like_repeated_rows(make):
    """With the CART start alone (no random hyperplanes) a weight of k is k copies of the row: the same losses and
    gradients (exactly: tests/engine/test_classes.py); the trees still differ a little, since scikit-learn's CART
    counts rows, not weights, in its stopping rules and float32 sums differ, so the check is loose."""
    X, y = _blobs(n=120, seed=5)
    weights = np.random.default_rng(1).integers(0, 4, size=len(y))
    repeated = make().fit(np.repeat(X, weights, axis=0), np.repeat(y, weights))
    weighted = make().fit(X, y, sample_weight=weights)
    rows = np.random.default_rng(2).random((500, 3))
    if hasattr(repeated, "classes_"):
        assert np.mean(repeated.predict(rows) == weighted.predict(rows)) > 0.95
    else:
        assert np.mean(np.abs(repeated.predict(rows) - weighted.predict(rows))) < 0.02 * np.ptp(y)
    assert repeated.tree_.meta["train_r2"] == pytest.approx(weighted.tree_.meta["train_r2"], abs=0.03)


def test_zero_weights_ignore_their_rows():
    X, y = _blobs(n=200, seed=2)
    y_poisoned = y.copy()
    y_poisoned[:60] = 2  # wrong labels, weighted out
    weights = np.r_[np.zeros(60), np.ones(140)]
    model = GETClassifier(depth=2, n_starts=2, n_epochs=40, random_state=0).fit(X, y_poisoned, sample_weight=weights)
    assert model.score(X[60:], y[60:]) > 0.85
    assert model.tree_.n_samples[0] == 140  # rows of weight 0 reach no node


def test_a_text_target_for_the_regressor_points_to_the_classifier():
    X, _ = _blobs()
    with pytest.raises(DataError, match="GETClassifier"):
        GETRegressor(depth=1, n_starts=1, n_epochs=2).fit(X, np.array(["a", "b", "c"] * 80))


def test_linear_leaves_are_not_a_classifier_parameter():
    """A classifier's ``leaf`` is 'constant' or 'logistic' (issue 52), never regression's 'linear'."""
    assert GETClassifier().get_params()["leaf"] == GETClassifierCV().get_params()["leaf"] == "constant"
    X, y = _blobs(n=60)
    for model in (GETClassifier(leaf="linear"), GETClassifierCV(leaf="linear")):
        with pytest.raises(ValueError, match="'leaf' parameter"):
            model.fit(X, y)


def test_fifty_classes():
    rng = np.random.default_rng(4)
    X = rng.random((1500, 2))
    y = np.minimum((X[:, 0] * 50).astype(int), 49)
    model = GETClassifier(depth=6, n_starts=2, n_epochs=40, random_state=0).fit(X, y)
    assert model.n_classes_ == 50 and model.predict_proba(X).shape == (1500, 50)
    assert model.score(X, y) > 0.3  # 64 leaves for 50 bins of x0; chance is 0.02


def test_the_cv_search_walks_the_split_feature_path_by_validation_accuracy(tmp_path):
    from get_core.engine.checkpoint import SearchCheckpoint

    X, y = _blobs(n=300, seed=6)
    labels = np.array(["a", "b", "c"])[y]
    search = dict(depths=(1, 2), n_starts=2, n_epochs=20, random_state=0, max_split_features="auto")
    cv = GETClassifierCV(**search).fit(X, labels, checkpoint=SearchCheckpoint(tmp_path))
    assert [r["max_split_features"] for r in cv.path_results_] == [1, 2, None]
    best = max(r["validation_accuracy"] for r in cv.path_results_)
    chosen = next(r for r in cv.path_results_ if r["max_split_features"] == cv.best_max_split_features_)
    assert chosen["validation_accuracy"] >= best - cv.sparsity_tolerance
    assert cv.best_validation_accuracy_ == chosen["validation_accuracy"]
    assert all({"validation_accuracy", "train_accuracy"} <= set(r) for r in cv.cv_results_)
    assert set(cv.predict(X)) <= set(labels)
    again = GETClassifierCV(**search).fit(X, labels, checkpoint=SearchCheckpoint(tmp_path))  # every fit stored
    np.testing.assert_array_equal(again.tree_.weights, cv.tree_.weights)


_TINY = dict(depth=1, n_starts=1, n_epochs=2, random_state=0)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(weight=st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10, 10) | st.text(max_size=3))
def test_a_class_weight_is_a_finite_number_at_least_0_or_refused_naming_its_class(weight):
    """class_weight={'a': -1} gave probabilities down to -1.63 and a model file that no longer loads; inf was
    refused as 'contains NaN'."""
    X, y = _blobs(n=60, seed=7, classes=2)
    labels = np.array(["a", "b"])[y]
    acceptable = isinstance(weight, (int, float)) and math.isfinite(weight) and weight >= 0
    model = GETClassifier(**_TINY, class_weight={"a": weight, "b": 1.0})
    if not acceptable:
        with pytest.raises(DataError, match=r"class_weight for class 'a' is .*finite number >= 0"):
            model.fit(X, labels)
        return
    proba = model.fit(X, labels).predict_proba(X)
    assert np.all((proba >= 0) & (proba <= 1))
    model_file.load_model_json(model_file.model_json(model.tree_))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(scale=st.floats(1e-310, 8e307), make=st.sampled_from([GETClassifier, GETRegressor]))
def test_sample_weights_of_any_finite_scale_fit_as_their_ratios(scale, make):
    """Weights whose sum leaves float64's range (all 1e308: "must contain at least one non-zero number", or all
    1e-320) weigh rows as their ratios do: the same tree as weights of 1 and 2."""
    X, y = _blobs(n=60, seed=8, classes=2)
    ratios = np.where(np.arange(60) % 3 == 0, 2.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow warnings inside sklearn's own checks
        scaled = make(**_TINY).fit(X, y, sample_weight=ratios * scale)
    plain = make(**_TINY).fit(X, y, sample_weight=ratios)
    rows = np.random.default_rng(3).random((200, 3))
    np.testing.assert_allclose(scaled.predict(rows), plain.predict(rows), rtol=1e-6)


def test_more_classes_than_the_library_cap_are_refused_before_the_fit():
    X = np.random.default_rng(0).random((2 * (LIBRARY_MAX_CLASSES + 1), 2))
    with pytest.raises(DataError, match=rf"y has {LIBRARY_MAX_CLASSES + 1:,} classes; GET fits at most "
                                        rf"{LIBRARY_MAX_CLASSES:,}"):
        GETClassifier(**_TINY).fit(X, np.arange(len(X)) % (LIBRARY_MAX_CLASSES + 1))


def _noisy_blobs(n=300, seed=0):
    """Three classes along a line with a fifth of the labels drawn at random: probabilities that need tempering."""
    X, y = _blobs(n, seed)
    rng = np.random.default_rng(seed + 1)
    flip = rng.random(n) < 0.2
    return X, np.where(flip, rng.integers(0, 3, n), y)


def _validation_log_loss(model, tree, X, y):
    """The log loss of ``tree`` (the search's rows) on the search's own validation rows of (X, y)."""
    _, X_val, _, y_val, _, _ = model._split(X, y, None, 0)
    return -model._tiebreak(tree, X_val, y_val, None)


@pytest.mark.parametrize("leaf", ["constant", "auto"])
def test_calibration_lowers_the_validation_log_loss_and_keeps_every_rows_class(leaf):
    X, y = _noisy_blobs()
    depths = (1, 2, 3) if leaf == "constant" else (0, 1, 2, 3)
    model = GETClassifierCV(depths=depths, leaf=leaf, n_starts=2, n_epochs=20, random_state=0).fit(X, y)
    T = model.temperature_
    assert T > 0 and model.tree_.meta["temperature"] == pytest.approx(T)
    validated = model.validated_tree_
    tempered = with_temperature(validated, T, engine_rows=True)
    assert _validation_log_loss(model, tempered, X, y) <= _validation_log_loss(
        model, with_temperature(validated, 1.0, engine_rows=True), X, y) + 1e-12
    plain = GETClassifierCV(depths=depths, leaf=leaf, n_starts=2, n_epochs=20, random_state=0,
                            calibrate=False).fit(X, y)
    assert plain.temperature_ == 1.0 and plain.tree_.meta["temperature"] == 1.0
    grid = np.random.default_rng(5).random((2000, 3))
    np.testing.assert_allclose(with_temperature(model.tree_, 1.0 / T).predict_proba(grid),
                               plain.predict_proba(grid), atol=1e-9)
    np.testing.assert_array_equal(model.predict(grid), plain.predict(grid))
    namespace = {}  # the tempered tree is of the same form: its model file and exports predict what it does
    exec(compile(codegen.python_source(model.tree_), "generated.py", "exec"), namespace)
    np.testing.assert_allclose([namespace["predict_proba"](list(r)) for r in grid[:200]],
                               model.predict_proba(grid[:200]), rtol=0, atol=1e-12)
    loaded = model_file.from_dict(json.loads(json.dumps(model_file.to_dict(model.tree_))))
    np.testing.assert_allclose(loaded.predict_proba(grid), model.predict_proba(grid), rtol=0, atol=1e-12)
    assert loaded.meta["temperature"] == model.tree_.meta["temperature"]


@pytest.fixture(scope="module")
def class_trees():
    """A class-share tree and a logistic-leaf tree (the two forms a temperature changes)."""
    X, y = _noisy_blobs()
    return {False: GETClassifier(depth=3, n_starts=2, n_epochs=10, random_state=0).fit(X, y).tree_,
            True: GETClassifier(depth=1, leaf="logistic", n_starts=2, n_epochs=10, random_state=0).fit(X, y).tree_}


@settings(max_examples=30, deadline=None)
@given(log_t=st.floats(-3.0, 3.0), logistic_leaves=st.booleans())
def test_a_temperature_keeps_each_rows_class_and_its_inverse_undoes_it(class_trees, log_t, logistic_leaves):
    tree = class_trees[logistic_leaves]
    T = float(np.exp(log_t))
    rows = np.random.default_rng(1).random((500, 3))
    before, after = tree.predict_proba(rows), with_temperature(tree, T).predict_proba(rows)
    np.testing.assert_allclose(after.sum(axis=1), 1.0)
    clear = np.sort(before, axis=1)[:, -1] - np.sort(before, axis=1)[:, -2] > 1e-9  # ties aside
    np.testing.assert_array_equal(after.argmax(axis=1)[clear], before.argmax(axis=1)[clear])
    np.testing.assert_allclose(with_temperature(with_temperature(tree, T), 1.0 / T).predict_proba(rows), before,
                               atol=1e-9)



def test_the_one_standard_error_rule_keeps_the_shallowest_depth_within_one_se_of_the_best():
    X, y = _noisy_blobs()
    kwargs = dict(depths=(1, 2, 3, 4), n_starts=2, n_epochs=20, random_state=0, patience=4)
    best = GETClassifierCV(**kwargs).fit(X, y)
    one_se = GETClassifierCV(depth_rule="one_se", **kwargs).fit(X, y)
    scores = {}
    for r in one_se.cv_results_:
        scores[r["depth"]] = max(scores.get(r["depth"], 0.0), r["validation_accuracy"])
    top = max(scores.values())
    n_val = len(one_se._split(X, y, None, 0)[3])
    within = [d for d in sorted(scores) if scores[d] >= top - np.sqrt(top * (1 - top) / n_val)]
    assert one_se.best_depth_ == within[0] <= best.best_depth_
    assert one_se.best_validation_accuracy_ == scores[within[0]]
    assert [r["validation_accuracy"] for r in one_se.cv_results_] == [r["validation_accuracy"]
                                                                      for r in best.cv_results_]
